// PLANTED BUG (scale layout): naive_e4m3 that reads b_scale as if it were
// [kb, nb]: output column j's k-block q takes element (q, j / 128) of the
// [nb, kb] tensor instead of (j / 128, q), the indices clamped to the shape
// (min(q, nb - 1), min(j / 128, kb - 1)) so it never reads outside it. When
// nb == kb == 1 that is the right element; otherwise most blocks are scaled
// by another block's scale (mismatch).
// Expected verdict: mismatch.
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
  // a and b decoded once, compact row-major [m][k] and [n][k].
  std::vector<float> a(size_t(m) * size_t(k)), b(size_t(n) * size_t(k));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t t = 0; t < k; ++t) a[size_t(i * k + t)] = lut[A.at<const uint8_t>(i, t)];
  for (int64_t j = 0; j < n; ++j)
    for (int64_t t = 0; t < k; ++t) b[size_t(j * k + t)] = lut[B.at<const uint8_t>(j, t)];
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const float* ai = a.data() + i * k;
      const float* bj = b.data() + j * k;
      float acc = 0.0f;
      for (int64_t q = 0; q < kb; ++q) {
        const int64_t t1 = std::min(k, (q + 1) * kBlock);
        float blk = 0.0f;  // this k-block's partial sum, f32
        for (int64_t t = q * kBlock; t < t1; ++t) blk += ai[t] * bj[t];
        acc += blk * (AS.at<const float>(i, q) *  // BUG: b_scale indices swapped (clamped)
                      BS.at<const float>(std::min(q, BS.rows - 1), std::min(j / kBlock, BS.cols - 1)));
      }
      D.at<uint16_t>(i, j) = to_bf16(acc);
    }
  return ASSAY_OK;
}
