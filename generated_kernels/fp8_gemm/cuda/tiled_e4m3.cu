// Correct cuda kernel: tiled block-scaled FP8 GEMM (DeepGEMM's fp8_gemm_nt
// convention), e4m3fn a [m, k] and b [n, k] (K-major), f32 scales a_scale
// [m, kb] (1 x 128 blocks) and b_scale [nb, kb] (128 x 128 blocks), bf16 d
// [m, n]. A 256-thread block computes a 64 x 64 tile of d (each thread a
// 4 x 4 grid of outputs, rows ty + 16r, columns tx + 16c); the grid has x
// over n's tiles and y over m's, the tile rows visited by a grid-stride loop
// over at most 65535 blocks in y. Per 128-element k-block, k-steps of 32:
// the 64 x 32 slices of a and b are decoded by hand to float into shared
// memory (bias 7, 3 mantissa bits, subnormals m * 2^-9, no infinity, only
// 0x7f / 0xff NaN; rows past m or n and k past the block's end are filled
// with 0 and never read), each thread adds its 16 products per k in k order
// to f32 block sums, and at the block's end promotes them: acc +=
// acc_block * (a_scale[i, blk] * b_scale[j / 128, blk]) in f32. The result
// is rounded once to bf16 (nearest even, NaN stays NaN) and stored where
// i < m and j < n. Strides and byte_offset are read from the DLTensors; a
// call that is not fp8_gemm as declared is refused (ASSAY_UNSUPPORTED)
// before anything is written. Launched on call->stream, never synchronized;
// a failed launch returns 2.
// Expected verdict: pass.
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#ifndef ASSAY_DL_FLOAT8_E4M3FN
#define ASSAY_DL_FLOAT8_E4M3FN 10
#endif
#ifndef ASSAY_DL_FLOAT8_E5M2
#define ASSAY_DL_FLOAT8_E5M2 12
#endif

namespace {

constexpr int64_t kBlock = 128;  // the scales' block along k (and along n for b_scale)
constexpr int kTile = 64;        // output tile: kTile x kTile per thread block
constexpr int kStep = 32;        // k-step within a 128-element block
constexpr int kThreads = 256;    // threads per block, 16 x 16
constexpr int kPer = 4;          // outputs per thread along each dimension (kTile / 16)

// A 2-D DLTensor [rows, cols] in device memory: element (r, c) lies
// r * rs + c * cs elements past base = data + byte_offset.
struct Mat {
  char* base;
  int64_t rows, cols, rs, cs;
  template <class T> __device__ T& at(int64_t r, int64_t c) const { return reinterpret_cast<T*>(base)[r * rs + c * cs]; }
};
Mat mat_of(const DLTensor& t) {  // strides NULL: compact row-major
  return Mat{static_cast<char*>(t.data) + t.byte_offset, t.shape[0], t.shape[1], t.strides ? t.strides[0] : t.shape[1],
             t.strides ? t.strides[1] : 1};
}

bool is(const DLTensor& t, unsigned code, unsigned bits) {
  return t.ndim == 2 && t.shape && t.dtype.code == code && t.dtype.bits == bits && t.dtype.lanes == 1;
}
bool shape_is(const DLTensor& t, int64_t rows, int64_t cols) { return t.shape[0] == rows && t.shape[1] == cols; }

// True when the call is fp8_gemm as this kernel takes it: a [m, k] and b
// [n, k] of the FP8 type code `fp8`, f32 a_scale [m, kb] and b_scale
// [nb, kb], bf16 d [m, n], no scalars.
bool fp8_call(const assay_call* call, unsigned fp8) {
  if (!call || !call->op || std::strcmp(call->op, "fp8_gemm") != 0) return false;
  if (call->num_inputs != 4 || call->num_outputs != 1 || call->num_scalars != 0) return false;
  if (!call->inputs || !call->outputs) return false;
  const DLTensor &a = call->inputs[0], &as = call->inputs[1], &b = call->inputs[2], &bs = call->inputs[3],
                 &d = call->outputs[0];
  if (!is(a, fp8, 8) || !is(as, kDLFloat, 32) || !is(b, fp8, 8) || !is(bs, kDLFloat, 32) || !is(d, kDLBfloat, 16))
    return false;
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[0];
  if (m < 0 || k < 0 || n < 0) return false;
  const int64_t kb = (k + kBlock - 1) / kBlock, nb = (n + kBlock - 1) / kBlock;
  return b.shape[1] == k && shape_is(as, m, kb) && shape_is(bs, nb, kb) && shape_is(d, m, n);
}

// e4m3fn (OCP FP8): 1 sign, 4 exponent bits (bias 7), 3 mantissa bits; no
// infinity: 0x7f and 0xff are NaN, 0x78..0x7e the finite 256..448.
__device__ float decode_e4m3(uint8_t x) {
  const uint32_t sign = uint32_t(x >> 7) << 31, e = (x >> 3) & 15u, mant = x & 7u;
  if ((x & 0x7fu) == 0x7fu) return __uint_as_float(sign | 0x7fc00000u);               // NaN
  if (e == 0) return __uint_as_float(sign | __float_as_uint(float(mant) * 0x1p-9f));   // zero, subnormal: mant * 2^-9
  return __uint_as_float(sign | ((e - 7u + 127u) << 23) | (mant << 20));               // (1 + mant / 8) * 2^(e - 7)
}

// f32 -> bf16, round to nearest even; NaN stays a (quiet) NaN.
__device__ uint16_t to_bf16(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

__global__ void __launch_bounds__(kThreads) fp8_gemm_tiled(Mat A, Mat AS, Mat B, Mat BS, Mat D, int64_t m, int64_t n,
                                                             int64_t k, int64_t kb) {
  __shared__ float As[kTile][kStep + 1], Bs[kTile][kStep + 1];  // +1: no bank conflicts on the row reads
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t j0 = int64_t(blockIdx.x) * kTile;
  for (int64_t i0 = int64_t(blockIdx.y) * kTile; i0 < m; i0 += int64_t(gridDim.y) * kTile) {
    float acc[kPer][kPer];
    for (int r = 0; r < kPer; ++r)
      for (int c = 0; c < kPer; ++c) acc[r][c] = 0.0f;
    for (int64_t q = 0; q < kb; ++q) {
      const int64_t kend = min(k, (q + 1) * kBlock);
      float blk[kPer][kPer];  // this k-block's partial sums, f32
      for (int r = 0; r < kPer; ++r)
        for (int c = 0; c < kPer; ++c) blk[r][c] = 0.0f;
      for (int64_t t0 = q * kBlock; t0 < kend; t0 += kStep) {
        for (int e = threadIdx.x; e < kTile * kStep; e += kThreads) {
          const int r = e / kStep, c = e % kStep;
          const int64_t t = t0 + c;
          As[r][c] = (i0 + r < m && t < kend) ? decode_e4m3(A.at<const uint8_t>(i0 + r, t)) : 0.0f;
          Bs[r][c] = (j0 + r < n && t < kend) ? decode_e4m3(B.at<const uint8_t>(j0 + r, t)) : 0.0f;
        }
        __syncthreads();
        const int steps = int(min(int64_t(kStep), kend - t0));  // the real k of this step only
        for (int c = 0; c < steps; ++c) {
          float av[kPer], bv[kPer];
          for (int r = 0; r < kPer; ++r) av[r] = As[ty + 16 * r][c], bv[r] = Bs[tx + 16 * r][c];
          for (int r = 0; r < kPer; ++r)
            for (int s = 0; s < kPer; ++s) blk[r][s] += av[r] * bv[s];
        }
        __syncthreads();
      }
      for (int r = 0; r < kPer; ++r) {
        const int64_t i = i0 + ty + 16 * r;
        if (i >= m) continue;
        const float sa = AS.at<const float>(i, q);
        for (int s = 0; s < kPer; ++s) {
          const int64_t j = j0 + tx + 16 * s;
          if (j < n) acc[r][s] += blk[r][s] * (sa * BS.at<const float>(j / kBlock, q));
        }
      }
    }
    for (int r = 0; r < kPer; ++r)
      for (int s = 0; s < kPer; ++s) {
        const int64_t i = i0 + ty + 16 * r, j = j0 + tx + 16 * s;
        if (i < m && j < n) D.at<uint16_t>(i, j) = to_bf16(acc[r][s]);
      }
  }
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (!fp8_call(call, ASSAY_DL_FLOAT8_E4M3FN)) return ASSAY_UNSUPPORTED;
  const DLTensor &a = call->inputs[0], &b = call->inputs[2];
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[0], kb = call->inputs[1].shape[1];
  if (m == 0 || n == 0) return ASSAY_OK;
  const dim3 grid(unsigned((n + kTile - 1) / kTile), unsigned(std::min<int64_t>((m + kTile - 1) / kTile, 65535)));
  fp8_gemm_tiled<<<grid, kThreads, 0, static_cast<cudaStream_t>(call->stream)>>>(
      mat_of(call->inputs[0]), mat_of(call->inputs[1]), mat_of(call->inputs[2]), mat_of(call->inputs[3]),
      mat_of(call->outputs[0]), m, n, k, kb);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
