// PLANTED BUG (scale-block indexing): naive_e4m3 with a_scale's k-block
// index computed from a block size of 64 instead of 128: k-block q (k
// indices 128q .. 128q + 127) takes a_scale[i, min(128q / 64, kb - 1)] =
// a_scale[i, min(2q, kb - 1)] instead of a_scale[i, q]. b_scale is indexed
// right. Blocks 0 and kb - 1 still get their own scale, so the bug shows only
// when kb >= 3 (k > 256) and a row's scales differ between blocks: then block
// q of 1 .. kb - 2 is scaled by a later block's scale and d is wrong by the
// ratio of the two scales (mismatch). Launched on call->stream, never
// synchronized; a failed launch returns 2.
// Expected verdict: mismatch.
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
constexpr int kThreads = 16;     // thread block: kThreads x kThreads outputs

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

__global__ void fp8_gemm(Mat A, Mat AS, Mat B, Mat BS, Mat D, int64_t m, int64_t n, int64_t k, int64_t kb) {
  const int64_t j = int64_t(blockIdx.x) * kThreads + threadIdx.x;
  if (j >= n) return;
  for (int64_t i = int64_t(blockIdx.y) * kThreads + threadIdx.y; i < m; i += int64_t(gridDim.y) * kThreads) {
    float acc = 0.0f;
    for (int64_t q = 0; q < kb; ++q) {
      const int64_t t1 = min(k, (q + 1) * kBlock);
      float blk = 0.0f;  // this k-block's partial sum, f32
      for (int64_t t = q * kBlock; t < t1; ++t)
        blk += decode_e4m3(A.at<const uint8_t>(i, t)) * decode_e4m3(B.at<const uint8_t>(j, t));
      acc += blk * (AS.at<const float>(i, min(q * kBlock / 64, kb - 1)) *  // BUG: / 64
                    BS.at<const float>(j / kBlock, q));
    }
    D.at<uint16_t>(i, j) = to_bf16(acc);
  }
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (!fp8_call(call, ASSAY_DL_FLOAT8_E4M3FN)) return ASSAY_UNSUPPORTED;
  const DLTensor &a = call->inputs[0], &b = call->inputs[2];
  const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[0], kb = call->inputs[1].shape[1];
  if (m == 0 || n == 0) return ASSAY_OK;
  const dim3 block(kThreads, kThreads);
  const dim3 grid(unsigned((n + kThreads - 1) / kThreads), unsigned(std::min<int64_t>((m + kThreads - 1) / kThreads, 65535)));
  fp8_gemm<<<grid, block, 0, static_cast<cudaStream_t>(call->stream)>>>(
      mat_of(call->inputs[0]), mat_of(call->inputs[1]), mat_of(call->inputs[2]), mat_of(call->inputs[3]),
      mat_of(call->outputs[0]), m, n, k, kb);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
