// Correct host kernel: mixed-precision GEMM, f16 A and B, f32 C, compute f32.
// Each f16 element is decoded to float exactly (a product of two f16 values is
// exact in f32); accumulation is in f32 in ascending k order; the epilogue runs
// in double and rounds once to f32.
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

// The epilogue, BLAS semantics: alpha == 0 skips A*B (0*Inf is not NaN there),
// beta == 0 never reads C0 (C may hold NaN poison).
double combine(double ab, double alpha, double beta, const float& c0) {
  double r = alpha == 0.0 ? 0.0 : alpha * ab;
  if (beta != 0.0) r += beta * c0;
  return r;
}

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f16{kDLFloat, 16, 1}, f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f16, f32)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < A.cols; ++p)
        acc += f16_to_float(A.at<uint16_t>(i, p)) * f16_to_float(B.at<uint16_t>(p, j));
      C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
    }
  return ASSAY_OK;
}
