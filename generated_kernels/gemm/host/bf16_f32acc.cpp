// Correct host kernel: bf16 A, B and C, compute f32. bf16 decodes exactly to
// float; accumulation is in f32 in ascending k order; alpha*acc + beta*C0 is
// formed in double and rounded once, to nearest even, to bf16 (NaN stays NaN).
#include <assay/abi.h>

#include <algorithm>
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

float bf16_to_float(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
// double -> bf16 with one rounding to nearest even (bf16 keeps 8 significant
// bits, normal exponents down to -126, subnormals down to 2^-133). NaN stays a
// quiet NaN; results at or past 2^128 become Inf.
uint16_t bf16_from_double(double d) {
  if (std::isnan(d)) return std::signbit(d) ? 0xffc0 : 0x7fc0;
  const int e = d == 0.0 ? -126 : std::max(std::ilogb(d), -126);  // exponent of d's bf16 spacing + 7
  double q = std::ldexp(std::nearbyint(std::ldexp(d, 7 - e)), e - 7);  // exact scalings, RNE
  if (std::fabs(q) >= 0x1p128) q = std::copysign(INFINITY, d);
  const float f = float(q);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return uint16_t(bits >> 16);
}

// The epilogue, BLAS semantics: alpha == 0 skips A*B (0*Inf is not NaN there),
// beta == 0 never reads C0 (C may hold NaN poison).
double combine(double ab, double alpha, double beta, const float& c0) {
  double r = alpha == 0.0 ? 0.0 : alpha * ab;
  if (beta != 0.0) r += beta * c0;
  return r;
}

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType bf16{kDLBfloat, 16, 1};
  if (!gemm_of(call, bf16, bf16)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < A.cols; ++p)
        acc += bf16_to_float(A.at<uint16_t>(i, p)) * bf16_to_float(B.at<uint16_t>(p, j));
      uint16_t& c = C.at<uint16_t>(i, j);
      c = bf16_from_double(combine(acc, alpha, beta, beta != 0.0 ? bf16_to_float(c) : 0.0f));
    }
  return ASSAY_OK;
}
