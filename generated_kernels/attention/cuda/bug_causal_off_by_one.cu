// PLANTED BUG (causal mask off by one): flash_f16 with the diagonal
// excluded: with causal = 1 row i sees keys j < i + sk - sq instead of
// j <= i + sk - sq. Every causal row loses its last key; a row that had
// only that key (row sq - sk, row 0 when sq == sk) is left with none and
// writes the empty answer (o = 0, lse = -inf). Non-causal cases are right.
// The verdict: any causal case with sq >= sk has that row, whose lse = -inf
// against a finite reference is a NaN/Inf class error (nan_mismatch, the
// more severe verdict); causal cases with sq < sk are only mismatch, and
// the sweep's first causal case is one (sq = 1, sk = 129).
// flash_f16's design otherwise: blocks of 8 warps, one query row each, K
// and V tiles of 64 keys staged in turn in one f16 shared buffer, online
// softmax in f32, lse written.
// Expected verdict: mismatch.
#include <assay/abi.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

constexpr int kWarps = 8;                      // query rows per block, one per warp
constexpr int kThreads = 32 * kWarps;
constexpr int kBlockN = 64;                    // keys per K/V tile
constexpr int kKeysPerLane = kBlockN / 32;     // logits each lane computes per tile
constexpr int kMaxD = 256;                     // the op's largest d and dv
constexpr int kCols = kMaxD / 32;              // output columns per lane
constexpr int kLd = kMaxD + 2;                 // tile row stride in halves: 129 words (odd), so 32 lanes
                                               // reading 32 different rows hit 32 different banks
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

constexpr DLDataType kF16{kDLFloat, 16, 1}, kF32{kDLFloat, 32, 1};

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
// hk, d and dv at most 256, the causal flag 0 or 1; else the kernel returns
// ASSAY_UNSUPPORTED without writing.
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
  if (p->d < 0 || p->d > kMaxD || p->dv < 0 || p->dv > kMaxD) return false;
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

// Keys row i sees: [0, key_end). Bottom-right causal: j <= i + sk - sq (a
// row with i < sq - sk sees none: key_end <= 0).
__device__ int key_end(int i, int sq, int sk, bool causal) {
  return causal ? min(sk, i + sk - sq) : sk;  // BUG: j < i + sk - sq, the diagonal left out
}

// Rows [j0, j0 + kBlockN) of X (head kh), columns [0, width), into the tile;
// warp w stages rows w, w + kWarps, ... Keys past sk become zeros, never
// read from memory.
__device__ void stage(__half (*tile)[kLd], const Tensor4& X, int64_t z, int kh, int j0, int sk, int width,
                      int warp, int lane) {
  for (int r = warp; r < kBlockN; r += kWarps) {
    const int j = j0 + r;
    for (int t = lane; t < width; t += 32) tile[r][t] = j < sk ? X.at<const __half>(z, kh, j, t) : __float2half(0.0f);
  }
}

__global__ void __launch_bounds__(kThreads)
    attention(Tensor4 Q, Tensor4 K, Tensor4 V, Tensor4 O, Tensor3 L, int hq, int hk, int sq, int sk, int d, int dv,
              float scale, bool causal, int row_blocks, int64_t tiles) {
  __shared__ __half kv[kBlockN][kLd];    // the K tile, then the V tile, of one key block
  __shared__ float qs[kWarps][kMaxD];    // each warp's query row
  __shared__ float ps[kWarps][kBlockN];  // each warp's P for the current tile
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int64_t zh = tile / row_blocks;
    const int64_t z = zh / hq;
    const int h = int(zh % hq), kh = h / (hq / hk);
    const int i0 = int(tile % row_blocks) * kWarps, i = i0 + warp;
    const bool active = i < sq;  // the last block of a head may have warps past sq
    const int row_end = key_end(i, sq, sk, causal);
    // Tiles past the block's last row's diagonal hold no key any row sees.
    const int block_end = key_end(min(i0 + kWarps, sq) - 1, sq, sk, causal);
    if (active)
      for (int t = lane; t < d; t += 32) qs[warp][t] = __half2float(Q.at<const __half>(z, h, i, t));
    __syncwarp();
    float m = -INFINITY, l = 0.0f, acc[kCols] = {};
    for (int j0 = 0; j0 < block_end; j0 += kBlockN) {
      __syncthreads();  // every warp is done with the previous tile's V
      stage(kv, K, z, kh, j0, sk, d, warp, lane);
      __syncthreads();  // the K tile is complete
      // This row's visible keys in the tile: [j0, j0 + n); n <= 0: none.
      const int n = active ? min(kBlockN, row_end - j0) : 0;
      if (n > 0) {
        float dot[kKeysPerLane] = {};
        for (int t = 0; t < d; ++t) {
          const float qt = qs[warp][t];
#pragma unroll
          for (int k = 0; k < kKeysPerLane; ++k) dot[k] += qt * __half2float(kv[lane + 32 * k][t]);
        }
        float s[kKeysPerLane], tmax = -INFINITY;
#pragma unroll
        for (int k = 0; k < kKeysPerLane; ++k) {
          s[k] = lane + 32 * k < n ? scale * dot[k] : -INFINITY;  // masked keys dropped by selection
          tmax = fmaxf(tmax, s[k]);
        }
        const float m_new = fmaxf(m, warp_max(tmax));
        // All logits so far -inf: subtract 0, so exp(-inf - 0) = 0, not NaN.
        const float m_use = m_new == -INFINITY ? 0.0f : m_new;
        const float alpha = expf(m - m_use);  // rescales the old l and acc (0 on the first tile)
        float psum = 0.0f;
#pragma unroll
        for (int k = 0; k < kKeysPerLane; ++k) {
          const int jj = lane + 32 * k;
          const float p = jj < n ? expf(s[k] - m_use) : 0.0f;
          ps[warp][jj] = p;
          psum += p;
        }
        l = l * alpha + warp_sum(psum);
        m = m_new;
#pragma unroll
        for (int k = 0; k < kCols; ++k) acc[k] *= alpha;
        __syncwarp();  // P is read by every lane of this warp
      }
      __syncthreads();  // every warp is done with the K tile
      stage(kv, V, z, kh, j0, sk, dv, warp, lane);
      __syncthreads();  // the V tile is complete
      for (int j = 0; j < n; ++j) {  // only the visible keys' values
        const float p = ps[warp][j];
#pragma unroll
        for (int k = 0; k < kCols; ++k) {
          const int c = lane + 32 * k;
          if (c < dv) acc[k] += p * __half2float(kv[j][c]);
        }
      }
    }
    if (active) {
      // l == 0: no visible key (or only -inf logits): o = 0, lse = -inf.
      const bool empty = l == 0.0f;
#pragma unroll
      for (int k = 0; k < kCols; ++k) {
        const int c = lane + 32 * k;
        if (c < dv) O.at<__half>(z, h, i, c) = __float2half_rn(empty ? 0.0f : acc[k] / l);
      }
      if (lane == 0) L.at(z, h, i) = empty ? -INFINITY : m + logf(l);
    }
  }
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  Problem p;
  if (!attention_call(call, kF16, &p)) return ASSAY_UNSUPPORTED;
  const int64_t row_blocks = (p.sq + kWarps - 1) / kWarps;
  const int64_t tiles = p.b * p.hq * row_blocks;
  if (tiles == 0) return ASSAY_OK;
  const auto stream = static_cast<cudaStream_t>(call->stream);
  attention<<<unsigned(std::min<int64_t>(tiles, 65535)), kThreads, 0, stream>>>(
      tensor4(call->inputs[0]), tensor4(call->inputs[1]), tensor4(call->inputs[2]), tensor4(call->outputs[0]),
      tensor3(call->outputs[1]), int(p.hq), int(p.hk), int(p.sq), int(p.sk), int(p.d), int(p.dv), p.scale, p.causal,
      int(row_blocks), tiles);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
