// PLANTED BUG (field-notes 2.6, precision shortcuts): f16 GEMM (f16 A, B, C)
// whose spec claims compute f32 but whose running sum is rounded to f16 after
// every add, as a kernel with half accumulators (HFMA) does. Each step loses up
// to half an f16 ulp of the partial sum, so the error grows like k * 2^-11
// instead of k * 2^-24. A checker with a loose fp16 tolerance (1e-2), small k or
// small-integer inputs (exact in f16 as long as partial sums stay below 2048)
// accepts it; the f32 error bound does not once k reaches a few dozen.
// Expected verdict: mismatch.
#include <assay/abi.h>

#include <cmath>
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

// f16 bits -> float, exact (subnormals, +-0, Inf and NaN payloads included).
float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, frac = h & 0x3ffu;
  if (exp == 0) return std::copysign(std::ldexp(float(frac), -24), sign ? -1.0f : 1.0f);
  const uint32_t bits = sign | (exp == 31 ? 0x7f800000u : (exp + 112) << 23) | frac << 13;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
// float -> f16 bits, round to nearest even; NaN stays NaN, |x| >= 65520 becomes Inf.
uint16_t f16_from_float(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint16_t sign = (u >> 16) & 0x8000u;
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return sign | 0x7e00u;
  if (u >= 0x477ff000u) return sign | 0x7c00u;
  if (u < 0x38800000u) return uint16_t(sign | uint16_t(std::nearbyint(std::fabs(f) * 0x1p24f)));  // subnormal
  u += 0xfffu + ((u >> 13) & 1u);
  return uint16_t(sign | ((u - 0x38000000u) >> 13));
}
float round_f16(float f) { return f16_to_float(f16_from_float(f)); }

// The epilogue, BLAS semantics: alpha == 0 skips A*B (0*Inf is not NaN there),
// beta == 0 never reads C0 (C may hold NaN poison).
double combine(double ab, double alpha, double beta, const float& c0) {
  double r = alpha == 0.0 ? 0.0 : alpha * ab;
  if (beta != 0.0) r += beta * c0;
  return r;
}

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f16{kDLFloat, 16, 1};
  if (!gemm_of(call, f16, f16)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < A.cols; ++p)  // BUG: the accumulator is an f16
        acc = round_f16(acc + f16_to_float(A.at<uint16_t>(i, p)) * f16_to_float(B.at<uint16_t>(p, j)));
      uint16_t& c = C.at<uint16_t>(i, j);
      c = f16_from_float(float(combine(acc, alpha, beta, beta != 0.0 ? f16_to_float(c) : 0.0f)));
    }
  return ASSAY_OK;
}
