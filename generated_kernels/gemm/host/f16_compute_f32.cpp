// Correct host kernel under `compute: f16`: every A and B element is converted
// to IEEE half (binary16) to nearest even by bit code: results below 2^-14
// land on f16's subnormal grid (2^-24; at most 2^-25, a tie, goes to 0),
// magnitudes from 65520 up become +-Inf, Inf stays Inf and NaN stays NaN.
// Products (exact: 11 x 11 bits, f16's range squared fits f32) and sums in
// f32, ascending k; the epilogue runs in double and rounds once to f32. Any
// strides and base offsets.
// Expected verdict: pass.
#include <assay/abi.h>

#include <cstdint>
#include <cstring>

namespace {

// A 2-D DLTensor: element (r, c) lives at data + byte_offset + (r*rs + c*cs) elements.
struct Mat {
  char* base;
  int64_t rows, cols, rs, cs;
  explicit Mat(const DLTensor& t)
      : base(static_cast<char*>(t.data) + t.byte_offset), rows(t.shape[0]), cols(t.shape[1]),
        rs(t.strides ? t.strides[0] : t.shape[1]), cs(t.strides ? t.strides[1] : 1) {}
  template <class T> T& at(int64_t r, int64_t c) const { return reinterpret_cast<T*>(base)[r * rs + c * cs]; }
};

bool same(const DLTensor& t, DLDataType d) {
  return t.ndim == 2 && t.dtype.code == d.code && t.dtype.bits == d.bits && t.dtype.lanes == 1;
}
// True when the call is a GEMM with A and B of type `in` and C of type `out`.
bool gemm_of(const assay_call* call, DLDataType in, DLDataType out) {
  return call->num_inputs == 2 && call->num_outputs == 1 && call->num_scalars == 2 &&
         same(call->inputs[0], in) && same(call->inputs[1], in) && same(call->outputs[0], out);
}

// Rounds significand `sig` shifted right by `shift` (1..31) to nearest even.
uint32_t shift_rne(uint32_t sig, int shift) {
  const uint32_t kept = sig >> shift, rest = sig & ((1u << shift) - 1u), half = 1u << (shift - 1);
  return kept + (rest > half || (rest == half && (kept & 1u)) ? 1u : 0u);
}

// f32 -> f16 bits, round to nearest even (IEEE conversion).
uint16_t f16_from_float(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t mag = u & 0x7fffffffu, exp = mag >> 23;
  if (mag > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));  // NaN, quiet
  if (mag >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520 (Inf included): +-Inf
  if (mag >= 0x38800000u)                                   // >= 2^-14: normal in f16
    // Rebias the exponent (127 -> 15) and round the 23-bit fraction to 10;
    // a carry out of the fraction bumps the exponent, which is what we want.
    return uint16_t(sign | shift_rne(((exp - 112u) << 23) | (mag & 0x7fffffu), 13));
  if (mag <= 0x33000000u) return sign;  // <= 2^-25 (f32 subnormals included): to +-0
  // f16 subnormal: value = sig * 2^(exp - 150), in units of 2^-24: sig >> (126 - exp).
  // exp is 102..112 here, so the shift is 14..24; rounding up to 0x400 gives
  // the smallest normal's bits.
  return uint16_t(sign | shift_rne((mag & 0x7fffffu) | 0x800000u, int(126u - exp)));
}

// f16 bits -> float, exact.
float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, frac = h & 0x3ffu;
  uint32_t bits;
  if (exp == 31) bits = sign | 0x7f800000u | frac << 13;
  else if (exp != 0) bits = sign | (exp + 112u) << 23 | frac << 13;
  else {  // 0 or subnormal: frac * 2^-24, exact in f32
    const float f = float(frac) * 0x1p-24f;
    std::memcpy(&bits, &f, 4);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float to_f16(float x) { return f16_to_float(f16_from_float(x)); }

// The epilogue, BLAS semantics: alpha == 0 skips A*B (0*Inf is not NaN there),
// beta == 0 never reads C0 (C may hold NaN poison).
double combine(double ab, double alpha, double beta, const float& c0) {
  double r = alpha == 0.0 ? 0.0 : alpha * ab;
  if (beta != 0.0) r += beta * c0;
  return r;
}

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) {
      float acc = 0.0f;
      if (alpha != 0.0)
        for (int64_t p = 0; p < A.cols; ++p) acc += to_f16(A.at<float>(i, p)) * to_f16(B.at<float>(p, j));
      C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
    }
  return ASSAY_OK;
}
