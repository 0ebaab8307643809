// Correct cuda kernel: softmax top-k routing of bf16 logits without forming
// the softmax. One warp per token (grid-stride over a grid capped at 65535
// blocks of 4 warps). exp is monotone, so the top-k of p is the top-k of the
// raw logits: topk rounds of a warp argmax over (logit, lowest index) ranks,
// round j taking the best ranked below round j - 1's (sorted: true); m is the
// first round's logit, lane 0 stores expf(x - m) per slot, then divides by
// their sum: p_i / (sum of the chosen p) with the full softmax sum cancelled
// (renormalize: true). bf16 widens exactly to f32 (bits << 16). Launched on
// call->stream, never synchronized; a failed launch returns 2.
// Expected verdict: pass.
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

// Blocks of kWarps tokens, capped at 65535; the kernels' token loops stride
// over the grid, so any token count is covered.
unsigned grid_of(int64_t tokens) { return unsigned(std::min<int64_t>((tokens + kWarps - 1) / kWarps, 65535)); }

constexpr DLDataType kBF16{kDLBfloat, 16, 1};

// bf16 widens to f32 exactly: its bits are the f32's top half.
__device__ float logit(const Mat& X, int64_t t, int e) { return __uint_as_float(unsigned(X.at<const unsigned short>(t, e)) << 16); }

__global__ void route(Mat X, Mat W, Mat I, int64_t tokens, int experts, int topk) {
  const int lane = threadIdx.x % 32;
  for (int64_t t = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32; t < tokens; t += int64_t(gridDim.x) * kWarps) {
    // topk rounds of a warp argmax over the raw logits (the top-k of x is
    // the top-k of p), round j taking the best ranked below round j - 1's.
    unsigned long long prev = 0;
    float m = 0.0f;
    for (int j = 0; j < topk; ++j) {
      unsigned long long best = 0;
      for (int e = lane; e < experts; e += 32) {
        const unsigned long long r = rank(logit(X, t, e), e);
        if ((j == 0 || r < prev) && r > best) best = r;
      }
      best = prev = warp_max_rank(best);
      const float x = value_of(best);
      if (j == 0) m = x;  // the largest logit
      if (lane == 0) I.at<int32_t>(t, j) = expert_of(best), W.at<float>(t, j) = expf(x - m);
    }
    // exp(x - m) over the chosen only: the full softmax sum cancels in the
    // renormalized weights and is never formed.
    if (lane == 0) {  // lane 0 rereads its own stores
      float chosen = 0.0f;
      for (int j = 0; j < topk; ++j) chosen += W.at<float>(t, j);
      for (int j = 0; j < topk; ++j) W.at<float>(t, j) = W.at<float>(t, j) / chosen;
    }
  }
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  const int64_t k = moe_call(call, kBF16, false);
  if (k < 0) return ASSAY_UNSUPPORTED;
  const int64_t tokens = call->inputs[0].shape[0];
  if (tokens == 0) return ASSAY_OK;
  const auto stream = static_cast<cudaStream_t>(call->stream);
  route<<<grid_of(tokens), 32 * kWarps, 0, stream>>>(mat_of(call->inputs[0]), mat_of(call->outputs[0]),
                                                   mat_of(call->outputs[1]), tokens, int(call->inputs[0].shape[1]),
                                                   int(k));
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
