// Correct host kernel: tiled block-scaled FP8 GEMM (DeepGEMM's fp8_gemm_nt
// convention), e4m3fn a [m, k] and b [n, k] (K-major), f32 scales a_scale
// [m, kb] (1 x 128 blocks) and b_scale [nb, kb] (128 x 128 blocks), bf16 d
// [m, n]. a is decoded by hand to float once per call ([m][k]), b once and
// transposed ([k][n]); e4m3fn: bias 7, 3 mantissa bits, subnormals m * 2^-9,
// no infinity, only 0x7f / 0xff NaN, 0x78..0x7e the finite 256..448. d is
// computed in 64 x 64 output tiles (partial tiles at the m and n edges): per
// 128-element k-block a 64 x 64 f32 tile of block sums is built in k-steps
// of 32 (the last step and block cut at k), then promoted: acc +=
// acc_block * (a_scale[i, blk] * b_scale[j / 128, blk]) in f32. Each
// output's block sum adds its products in k order, as naive_e4m3 does. The
// result is rounded once to bf16 (nearest even, NaN stays NaN). Strides and
// byte_offset are read from the DLTensors; a call that is not fp8_gemm as
// declared is refused (ASSAY_UNSUPPORTED) before anything is written.
// Expected verdict: pass.
#include <assay/abi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#ifndef ASSAY_DL_FLOAT8_E4M3FN
#define ASSAY_DL_FLOAT8_E4M3FN 10
#endif
#ifndef ASSAY_DL_FLOAT8_E5M2
#define ASSAY_DL_FLOAT8_E5M2 12
#endif

namespace {

constexpr int64_t kBlock = 128;  // the scales' block along k (and along n for b_scale)
constexpr int64_t kTile = 64;    // output tile: kTile x kTile
constexpr int64_t kStep = 32;    // k-step within a block

// A 2-D DLTensor [rows, cols]: element (r, c) lies r * rs + c * cs elements
// past data + byte_offset (strides NULL: compact row-major).
struct Mat {
  char* base;
  int64_t rows, cols, rs, cs;
  explicit Mat(const DLTensor& t)
      : base(static_cast<char*>(t.data) + t.byte_offset), rows(t.shape[0]), cols(t.shape[1]),
        rs(t.strides ? t.strides[0] : t.shape[1]), cs(t.strides ? t.strides[1] : 1) {}
  template <class T> T& at(int64_t r, int64_t c) const { return reinterpret_cast<T*>(base)[r * rs + c * cs]; }
};

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

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// e4m3fn (OCP FP8): 1 sign, 4 exponent bits (bias 7), 3 mantissa bits; no
// infinity: 0x7f and 0xff are NaN, 0x78..0x7e the finite 256..448.
float decode_e4m3(uint8_t x) {
  const uint32_t sign = uint32_t(x >> 7) << 31, e = (x >> 3) & 15u, mant = x & 7u;
  if ((x & 0x7fu) == 0x7fu) return from_bits(sign | 0x7fc00000u);        // NaN
  if (e == 0) return from_bits(sign | bits_of(float(mant) * 0x1p-9f));    // zero, subnormal: mant * 2^-9
  return from_bits(sign | ((e - 7u + 127u) << 23) | (mant << 20));        // (1 + mant / 8) * 2^(e - 7)
}

// f32 -> bf16, round to nearest even; NaN stays a (quiet) NaN.
uint16_t to_bf16(float f) {
  const uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (!fp8_call(call, ASSAY_DL_FLOAT8_E4M3FN)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), AS(call->inputs[1]), B(call->inputs[2]), BS(call->inputs[3]), D(call->outputs[0]);
  const int64_t m = A.rows, k = A.cols, n = B.rows, kb = AS.cols;
  float lut[256];
  for (int v = 0; v < 256; ++v) lut[v] = decode_e4m3(uint8_t(v));
  // a decoded once as [m][k], b once and transposed as [k][n].
  std::vector<float> a(size_t(m) * size_t(k)), bt(size_t(k) * size_t(n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t t = 0; t < k; ++t) a[size_t(i * k + t)] = lut[A.at<const uint8_t>(i, t)];
  for (int64_t j = 0; j < n; ++j)
    for (int64_t t = 0; t < k; ++t) bt[size_t(t * n + j)] = lut[B.at<const uint8_t>(j, t)];
  std::vector<float> acc(size_t(kTile * kTile)), blk(size_t(kTile * kTile));
  for (int64_t i0 = 0; i0 < m; i0 += kTile)
    for (int64_t j0 = 0; j0 < n; j0 += kTile) {
      const int64_t ti = std::min(kTile, m - i0), tj = std::min(kTile, n - j0);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t q = 0; q < kb; ++q) {
        const int64_t kend = std::min(k, (q + 1) * kBlock);
        std::fill(blk.begin(), blk.end(), 0.0f);  // this k-block's partial sums, f32
        for (int64_t t0 = q * kBlock; t0 < kend; t0 += kStep) {
          const int64_t t1 = std::min(kend, t0 + kStep);
          for (int64_t ii = 0; ii < ti; ++ii) {
            const float* ai = a.data() + (i0 + ii) * k;
            float* bl = blk.data() + ii * kTile;
            for (int64_t t = t0; t < t1; ++t) {
              const float x = ai[t];
              const float* bp = bt.data() + t * n + j0;
              for (int64_t jj = 0; jj < tj; ++jj) bl[jj] += x * bp[jj];
            }
          }
        }
        for (int64_t ii = 0; ii < ti; ++ii) {
          const float sa = AS.at<const float>(i0 + ii, q);
          for (int64_t jj = 0; jj < tj; ++jj)
            acc[size_t(ii * kTile + jj)] += blk[size_t(ii * kTile + jj)] * (sa * BS.at<const float>((j0 + jj) / kBlock, q));
        }
      }
      for (int64_t ii = 0; ii < ti; ++ii)
        for (int64_t jj = 0; jj < tj; ++jj) D.at<uint16_t>(i0 + ii, j0 + jj) = to_bf16(acc[size_t(ii * kTile + jj)]);
    }
  return ASSAY_OK;
}
