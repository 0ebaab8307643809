// Correct cuda kernel: naive three-pass forward attention, f32 q, k, v and
// o, f32 lse. One block of 4 warps per query row (rows of every batch and
// head flattened, visited by a grid-stride loop over at most 65535 blocks).
// A logit s_j = scale * q.k_j is one warp's dot product (lanes over the d
// columns, a shuffle sum), recomputed the same way in every pass: pass 1
// the row max m (fmaxf, a block reduction), pass 2 S = sum of
// expf(s_j - m), pass 3 o_c = sum_j expf(s_j - m) v_jc / S, the P of 128
// keys at a time put in shared memory and each thread summing its column.
// Only the visible keys are visited (all sk, or with causal j <= i + sk - sq,
// bottom-right), so masked keys and values are never read; a row with none
// gets o = 0, lse = -inf; lse = m + logf(S). NaN and +inf logits flow
// through the arithmetic into NaN rows. Any strides, GQA (kv head
// h / (hq / hk)), any d and dv. Launched on call->stream, never
// synchronized; a failed launch returns 2. expf: CUDA's 2-ulp bound.
// Expected verdict: pass.
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

constexpr int kWarps = 4;  // per block; the block takes one query row
constexpr int kThreads = 32 * kWarps;
constexpr unsigned kAll = 0xffffffffu;

// A 4-D DLTensor [b, h, s, c] in device memory: element (z, h, i, c) lies
// z * s0 + h * s1 + i * s2 + c * s3 elements past base = data + byte_offset.
struct Tensor4 {
  char* base;
  int64_t s0, s1, s2, s3;
  template <class T> __device__ T& at(int64_t z, int64_t h, int64_t i, int64_t c) const {
    return reinterpret_cast<T*>(base)[z * s0 + h * s1 + i * s2 + c * s3];
  }
};
// The 3-D lse [b, h, s], f32.
struct Tensor3 {
  char* base;
  int64_t s0, s1, s2;
  __device__ float& at(int64_t z, int64_t h, int64_t i) const {
    return reinterpret_cast<float*>(base)[z * s0 + h * s1 + i * s2];
  }
};
// Stride of dimension k; NULL strides would mean compact row-major.
int64_t stride_of(const DLTensor& t, int k) {
  if (t.strides) return t.strides[k];
  int64_t s = 1;
  for (int j = k + 1; j < t.ndim; ++j) s *= t.shape[j];
  return s;
}
Tensor4 tensor4(const DLTensor& t) {
  return {static_cast<char*>(t.data) + t.byte_offset, stride_of(t, 0), stride_of(t, 1), stride_of(t, 2),
          stride_of(t, 3)};
}
Tensor3 tensor3(const DLTensor& t) {
  return {static_cast<char*>(t.data) + t.byte_offset, stride_of(t, 0), stride_of(t, 1), stride_of(t, 2)};
}

constexpr DLDataType kF32{kDLFloat, 32, 1};

bool is(const DLTensor& t, DLDataType d, int ndim) {
  return t.ndim == ndim && t.dtype.code == d.code && t.dtype.bits == d.bits && t.dtype.lanes == 1;
}

struct Problem {
  int64_t b, hq, hk, sq, sk, d, dv;
  float scale;
  bool causal;
};
// True when the call is attention as this kernel takes it: q, k, v, o of
// type `dt`, lse f32 (as outputs[1]), shapes consistent, hq a multiple of
// hk, the causal flag 0 or 1; else the kernel returns ASSAY_UNSUPPORTED
// without writing.
bool attention_call(const assay_call* call, DLDataType dt, Problem* p) {
  if (!call || !call->op || std::strcmp(call->op, "attention") != 0) return false;
  if (call->num_inputs != 3 || call->num_outputs != 2 || call->num_scalars != 2) return false;
  if (!call->inputs || !call->outputs || !call->scalars) return false;
  const DLTensor &q = call->inputs[0], &k = call->inputs[1], &v = call->inputs[2];
  const DLTensor &o = call->outputs[0], &lse = call->outputs[1];
  if (!is(q, dt, 4) || !is(k, dt, 4) || !is(v, dt, 4) || !is(o, dt, 4) || !is(lse, kF32, 3)) return false;
  *p = {q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3], 0.0f, false};
  if (p->b < 0 || p->hq < 0 || p->hq > (1 << 30) || p->hk < 1 || p->hq % p->hk != 0) return false;
  if (p->sq < 0 || p->sk < 0 || p->sq > (1 << 30) || p->sk > (1 << 30)) return false;
  if (p->d < 0 || p->d > (1 << 30) || p->dv < 0 || p->dv > (1 << 30)) return false;
  if (k.shape[0] != p->b || k.shape[3] != p->d) return false;
  if (v.shape[0] != p->b || v.shape[1] != p->hk || v.shape[2] != p->sk) return false;
  if (o.shape[0] != p->b || o.shape[1] != p->hq || o.shape[2] != p->sq || o.shape[3] != p->dv) return false;
  if (lse.shape[0] != p->b || lse.shape[1] != p->hq || lse.shape[2] != p->sq) return false;
  const double causal = call->scalars[1];
  if (causal != 0.0 && causal != 1.0) return false;
  p->scale = float(call->scalars[0]);
  p->causal = causal == 1.0;
  return true;
}

__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(kAll, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(kAll, v, o);
  return v;
}
// Block-wide max / sum of v, in a fixed order (deterministic); red holds the
// warps' partials and is free again on return.
__device__ float block_max(float v, float* red) {
  v = warp_max(v);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float r = red[0];
  for (int w = 1; w < kWarps; ++w) r = fmaxf(r, red[w]);
  __syncthreads();
  return r;
}
__device__ float block_sum(float v, float* red) {
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float r = red[0];
  for (int w = 1; w < kWarps; ++w) r += red[w];
  __syncthreads();
  return r;
}

// s_j of row (z, h, i) against key (z, kh, j), computed by a whole warp
// (every lane gets it). The same code in every pass gives the same bits;
// __fmul_rn keeps the scale product from being fused into a later subtraction.
__device__ float logit(const Tensor4& Q, const Tensor4& K, int64_t z, int64_t h, int64_t kh, int64_t i, int64_t j,
                       int d, float scale) {
  float dot = 0.0f;
  for (int t = threadIdx.x % 32; t < d; t += 32) dot += Q.at<const float>(z, h, i, t) * K.at<const float>(z, kh, j, t);
  return __fmul_rn(scale, warp_sum(dot));
}

__global__ void __launch_bounds__(kThreads)
    attention(Tensor4 Q, Tensor4 K, Tensor4 V, Tensor4 O, Tensor3 L, int hq, int hk, int sq, int sk, int d, int dv,
              float scale, bool causal, int64_t rows) {
  __shared__ float red[kWarps];   // block reductions' warp partials
  __shared__ float ps[kThreads];  // P of one chunk of kThreads keys
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int i = int(row % sq);
    const int64_t zh = row / sq, z = zh / hq;
    const int h = int(zh % hq), kh = h / (hq / hk);
    // Visible keys: [0, n); bottom-right causal j <= i + sk - sq.
    const int n = causal ? min(sk, i + sk - sq + 1) : sk;
    if (n <= 0) {  // no visible key: the op's empty-row answer
      for (int c = threadIdx.x; c < dv; c += kThreads) O.at<float>(z, h, i, c) = 0.0f;
      if (threadIdx.x == 0) L.at(z, h, i) = -INFINITY;
      continue;
    }
    // Pass 1: the max; warp w takes keys w, w + kWarps, ...
    float m = -INFINITY;
    for (int j = warp; j < n; j += kWarps) m = fmaxf(m, logit(Q, K, z, h, kh, i, j, d, scale));
    m = block_max(m, red);
    // Pass 2: the sum of exp(s - m) (every lane holds it; lane 0's counts).
    float sum = 0.0f;
    for (int j = warp; j < n; j += kWarps) sum += expf(logit(Q, K, z, h, kh, i, j, d, scale) - m);
    sum = block_sum(lane == 0 ? sum : 0.0f, red);
    // Pass 3: thread c of a group of kThreads columns sums p_j v_jc over the
    // keys, kThreads keys' P at a time in shared memory.
    for (int c0 = 0; c0 < dv; c0 += kThreads) {
      const int c = c0 + threadIdx.x;
      float acc = 0.0f;
      for (int j0 = 0; j0 < n; j0 += kThreads) {
        const int chunk = min(kThreads, n - j0);
        __syncthreads();  // the previous chunk's P is consumed
        for (int jj = warp; jj < chunk; jj += kWarps) {
          const float p = expf(logit(Q, K, z, h, kh, i, j0 + jj, d, scale) - m);
          if (lane == 0) ps[jj] = p;
        }
        __syncthreads();  // this chunk's P is complete
        if (c < dv)
          for (int jj = 0; jj < chunk; ++jj) acc += ps[jj] * V.at<const float>(z, kh, j0 + jj, c);
      }
      if (c < dv) O.at<float>(z, h, i, c) = acc / sum;
    }
    if (threadIdx.x == 0) L.at(z, h, i) = m + logf(sum);
  }
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  Problem p;
  if (!attention_call(call, kF32, &p)) return ASSAY_UNSUPPORTED;
  const int64_t rows = p.b * p.hq * p.sq;
  if (rows == 0) return ASSAY_OK;
  const auto stream = static_cast<cudaStream_t>(call->stream);
  attention<<<unsigned(std::min<int64_t>(rows, 65535)), kThreads, 0, stream>>>(
      tensor4(call->inputs[0]), tensor4(call->inputs[1]), tensor4(call->inputs[2]), tensor4(call->outputs[0]),
      tensor3(call->outputs[1]), int(p.hq), int(p.hk), int(p.sq), int(p.sk), int(p.d), int(p.dv), p.scale, p.causal,
      rows);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
