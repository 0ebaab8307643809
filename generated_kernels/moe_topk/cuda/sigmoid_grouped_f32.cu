// Correct cuda kernel: sigmoid_bias_grouped routing (DeepSeek-V3 config:
// n_group 8, topk_group 4, routed_scaling_factor 2.5, renormalize, f32 bias).
// One warp per token (grid-stride over a grid capped at 65535 blocks of 4
// warps). s = 1 / (1 + expf(-x)), sel = s + bias, recomputed where needed (the
// same instructions, the same bits); a group's score is the sum of its two
// largest sel (each lane's top two, merged by a shuffle butterfly; one sel in
// a group of one expert); the 4 groups of highest score are kept (ties: the
// lower group); topk rounds of a warp argmax over (sel, lowest index) ranks
// among the kept groups' experts, round j taking the best ranked below round j
// - 1's (sorted: true); lane 0 stores index and s per slot, then s / (sum of
// the chosen s + 1e-20f) * 2.5. Launched on call->stream, never synchronized;
// a failed launch returns 2.
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

// The 1-D bias [experts]: element e lies e * step elements past data + byte_offset.
struct Vec {
  const char* base;
  int64_t step;
  __device__ float operator[](int64_t e) const { return reinterpret_cast<const float*>(base)[e * step]; }
};
Vec vec_of(const DLTensor& t) { return Vec{static_cast<const char*>(t.data) + t.byte_offset, t.strides ? t.strides[0] : 1}; }

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
// An expert's place in the routing order: the higher rank wins; equal
// values go to the lower index. Never 0 (the low word is at least 2^32 - 2^31).
__device__ unsigned long long rank(float v, int e) {
  return (unsigned long long)key(v) << 32 | (0xffffffffu - unsigned(e));
}
__device__ int expert_of(unsigned long long r) { return int(0xffffffffu - unsigned(r & 0xffffffffu)); }
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

constexpr int kGroups = 8, kTopkGroup = 4;  // routing.n_group, routing.topk_group
constexpr float kScale = 2.5f;              // routing.routed_scaling_factor
constexpr float kEps = 1e-20f;              // DeepSeek-V3's guard of the denominator

// Not inlined: one copy of the code, so every call gives the same bits.
__device__ __noinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ float sel_of(const Mat& X, const Vec& B, int64_t t, int e) { return sigmoid(X.at<const float>(t, e)) + B[e]; }
// (t1, t2): the two largest values seen, t1 >= t2 (-inf while unseen); NaNs are passed over.
__device__ void top2(float v, float& t1, float& t2) {
  if (v > t1) t2 = t1, t1 = v;
  else if (v > t2) t2 = v;
}

__global__ void route(Mat X, Vec B, Mat W, Mat I, int64_t tokens, int experts, int topk) {
  const int lane = threadIdx.x % 32, size = experts / kGroups;
  for (int64_t t = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32; t < tokens; t += int64_t(gridDim.x) * kWarps) {
    // Group scores: each lane's two largest sel of the group, merged over the
    // warp by a butterfly (disjoint halves each step); one sel in a group of one.
    unsigned long long group[kGroups];
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      float t1 = -INFINITY, t2 = -INFINITY;
      for (int e = g * size + lane; e < (g + 1) * size; e += 32) top2(sel_of(X, B, t, e), t1, t2);
      for (int o = 16; o > 0; o /= 2) {
        const float u1 = __shfl_xor_sync(kAll, t1, o), u2 = __shfl_xor_sync(kAll, t2, o);
        top2(u1, t1, t2), top2(u2, t1, t2);
      }
      group[g] = rank(size == 1 ? t1 : t1 + t2, g);
    }
    // The kTopkGroup groups of highest score are kept (ties: the lower group).
    unsigned kept = 0;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      int above = 0;
#pragma unroll
      for (int h = 0; h < kGroups; ++h) above += group[h] > group[g];
      if (above < kTopkGroup) kept |= 1u << g;
    }
    // topk rounds of a warp argmax over the candidates, round j taking the
    // best ranked below round j - 1's: slot j gets the j-th best (sorted).
    unsigned long long prev = 0;
    for (int j = 0; j < topk; ++j) {
      unsigned long long best = 0;
      for (int e = lane; e < experts; e += 32) {
        if (!(kept >> (e / size) & 1u)) continue;
        const unsigned long long r = rank(sel_of(X, B, t, e), e);
        if ((j == 0 || r < prev) && r > best) best = r;
      }
      best = prev = warp_max_rank(best);
      if (lane == 0) {
        const int e = expert_of(best);
        I.at<int32_t>(t, j) = e, W.at<float>(t, j) = sigmoid(X.at<const float>(t, e));
      }
    }
    if (lane == 0) {  // lane 0 rereads its own stores
      float chosen = 0.0f;
      for (int j = 0; j < topk; ++j) chosen += W.at<float>(t, j);
      for (int j = 0; j < topk; ++j) W.at<float>(t, j) = W.at<float>(t, j) / (chosen + kEps) * kScale;
    }
  }
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  const int64_t k = moe_call(call, kF32, true);
  if (k < 0) return ASSAY_UNSUPPORTED;
  const int64_t tokens = call->inputs[0].shape[0], experts = call->inputs[0].shape[1];
  if (experts % kGroups != 0 || k > kTopkGroup * (experts / kGroups)) return ASSAY_UNSUPPORTED;
  if (tokens == 0) return ASSAY_OK;
  const auto stream = static_cast<cudaStream_t>(call->stream);
  route<<<grid_of(tokens), 32 * kWarps, 0, stream>>>(mat_of(call->inputs[0]), vec_of(call->inputs[1]),
                                                   mat_of(call->outputs[0]), mat_of(call->outputs[1]), tokens,
                                                   int(experts), int(k));
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
