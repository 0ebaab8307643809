// PLANTED BUG (field-notes 2b routing, 2.5 loop bounds): softmax_topk_f32
// whose selection loop runs one round too many (j <= topk) and stores each
// round's pick at slot min(j, topk - 1): the last slot ends with the
// (topk+1)-th best expert instead of the topk-th, and the weights are
// renormalized over that wrong set. When topk == experts the extra round finds
// nobody (rank 0) and stops; every topk < experts token without a tie between
// the k-th and (k+1)-th best is wrong. Warp per token, grid-stride,
// call->stream, launch checked, as softmax_topk_f32.
// Expected verdict: mismatch.
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

constexpr int kWarps = 4;  // warps per block, one token per warp
constexpr unsigned kAll = 0xffffffffu;

// A 2-D DLTensor [rows, cols] in device memory: element (r, c) lies
// r * rs + c * cs elements past base = data + byte_offset.
struct Mat {
  char* base;
  int64_t rs, cs;
  template <class T> __device__ T& at(int64_t r, int64_t c) const { return reinterpret_cast<T*>(base)[r * rs + c * cs]; }
};
Mat mat_of(const DLTensor& t) {  // strides NULL: compact row-major
  return Mat{static_cast<char*>(t.data) + t.byte_offset, t.strides ? t.strides[0] : t.shape[1],
             t.strides ? t.strides[1] : 1};
}

constexpr DLDataType kF32{kDLFloat, 32, 1}, kI32{kDLInt, 32, 1};

bool is(const DLTensor& t, DLDataType d, int ndim) {
  return t.ndim == ndim && t.dtype.code == d.code && t.dtype.bits == d.bits && t.dtype.lanes == 1;
}
// topk when the call is moe_topk as this kernel takes it: logits of type
// `in` [tokens, experts], an f32 bias [experts] exactly when `bias`, f32
// weights and i32 indices [tokens, topk], the one scalar topk a whole number
// in [1, experts]; else -1 (the kernel then returns ASSAY_UNSUPPORTED).
int64_t moe_call(const assay_call* call, DLDataType in, bool bias) {
  if (!call || !call->op || std::strcmp(call->op, "moe_topk") != 0) return -1;
  if (call->num_inputs != (bias ? 2 : 1) || call->num_outputs != 2 || call->num_scalars != 1) return -1;
  if (!call->inputs || !call->outputs || !call->scalars) return -1;
  const DLTensor &x = call->inputs[0], &w = call->outputs[0], &i = call->outputs[1];
  if (!is(x, in, 2) || !is(w, kF32, 2) || !is(i, kI32, 2)) return -1;
  const int64_t tokens = x.shape[0], experts = x.shape[1];
  const double k = call->scalars[0];
  if (experts > INT32_MAX || !(k >= 1 && k <= double(experts)) || k != std::floor(k)) return -1;
  const int64_t topk = int64_t(k);
  if (w.shape[0] != tokens || w.shape[1] != topk || i.shape[0] != tokens || i.shape[1] != topk) return -1;
  if (bias && (!is(call->inputs[1], kF32, 1) || call->inputs[1].shape[0] != experts)) return -1;
  return topk;
}

// Floats as ordered unsigned integers: a larger key is a larger value, -0
// counts as +0, and NaNs sort above +inf or below -inf by their sign, so
// every token's experts are totally ordered and every slot gets an expert.
__device__ uint32_t key(float v) {
  if (v == 0.0f) v = 0.0f;
  const uint32_t b = __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ float value_of_key(uint32_t k) { return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k); }
// An expert's place in the routing order: the higher rank wins; equal
// values go to the lower index. Never 0 (the low word is at least 2^32 - 2^31).
__device__ unsigned long long rank(float v, int e) {
  return (unsigned long long)key(v) << 32 | (0xffffffffu - unsigned(e));
}
__device__ int expert_of(unsigned long long r) { return int(0xffffffffu - unsigned(r & 0xffffffffu)); }
__device__ float value_of(unsigned long long r) { return value_of_key(unsigned(r >> 32)); }
__device__ unsigned long long warp_max_rank(unsigned long long v) {
  for (int o = 16; o > 0; o /= 2) {
    const unsigned long long u = __shfl_xor_sync(kAll, v, o);
    v = u > v ? u : v;
  }
  return v;
}

__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(kAll, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(kAll, v, o);
  return v;
}

// Blocks of kWarps tokens, capped at 65535; the kernels' token loops stride
// over the grid, so any token count is covered.
unsigned grid_of(int64_t tokens) { return unsigned(std::min<int64_t>((tokens + kWarps - 1) / kWarps, 65535)); }

__global__ void route(Mat X, Mat W, Mat I, int64_t tokens, int experts, int topk) {
  const int lane = threadIdx.x % 32;
  for (int64_t t = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32; t < tokens; t += int64_t(gridDim.x) * kWarps) {
    float m = -INFINITY;
    for (int e = lane; e < experts; e += 32) m = fmaxf(m, X.at<const float>(t, e));
    m = warp_max(m);
    float sum = 0.0f;
    for (int e = lane; e < experts; e += 32) sum += expf(X.at<const float>(t, e) - m);
    sum = warp_sum(sum);
    // Rounds of a warp argmax, round j taking the best expert ranked below
    // round j - 1's. BUG: one round too many (j <= topk), its pick
    // overwriting the last slot with the (topk+1)-th best.
    unsigned long long prev = 0;
    for (int j = 0; j <= topk; ++j) {
      unsigned long long best = 0;
      for (int e = lane; e < experts; e += 32) {
        const unsigned long long r = rank(expf(X.at<const float>(t, e) - m) / sum, e);
        if ((j == 0 || r < prev) && r > best) best = r;
      }
      best = prev = warp_max_rank(best);
      if (best == 0) break;  // topk == experts: nobody is left for the extra round
      if (lane == 0) I.at<int32_t>(t, min(j, topk - 1)) = expert_of(best), W.at<float>(t, min(j, topk - 1)) = value_of(best);
    }
    if (lane == 0) {  // lane 0 rereads its own stores
      float chosen = 0.0f;
      for (int j = 0; j < topk; ++j) chosen += W.at<float>(t, j);
      for (int j = 0; j < topk; ++j) W.at<float>(t, j) = W.at<float>(t, j) / chosen;
    }
  }
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  const int64_t k = moe_call(call, kF32, false);
  if (k < 0) return ASSAY_UNSUPPORTED;
  const int64_t tokens = call->inputs[0].shape[0];
  const int experts = int(call->inputs[0].shape[1]);
  if (tokens == 0) return ASSAY_OK;
  const auto stream = static_cast<cudaStream_t>(call->stream);
  route<<<grid_of(tokens), 32 * kWarps, 0, stream>>>(mat_of(call->inputs[0]), mat_of(call->outputs[0]),
                                              mat_of(call->outputs[1]), tokens, experts, int(k));
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
