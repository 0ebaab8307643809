// Correct host kernel under `compute: tf32`: every A and B element is rounded
// to TF32 (f32's exponent range, 10 fraction bits) to nearest even by bit
// code: f32 subnormals land on TF32's own subnormal grid (2^-136), values past
// TF32's largest finite become +-Inf, Inf and NaN pass through. Products
// (exact: 11 x 11 bits) and sums in f32, ascending k; the epilogue runs in
// double and rounds once to f32. Any strides and base offsets.
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

// f32 -> TF32 (kept in an f32), round to nearest even on the 13 dropped bits.
// Adding 0xfff plus the lowest kept bit carries exactly when the dropped part
// is above half, or half with an odd kept part; a carry out of the fraction
// bumps the exponent (up to Inf past the largest TF32, (2 - 2^-10) 2^127).
// Subnormals need nothing special: clearing 13 bits of an f32 subnormal
// leaves a multiple of 2^-136, TF32's subnormal spacing.
float to_tf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) {  // Inf and NaN stay as they are
    u += 0xfffu + ((u >> 13) & 1u);
    u &= ~0x1fffu;
  }
  float f;
  std::memcpy(&f, &u, 4);
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
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) {
      float acc = 0.0f;
      if (alpha != 0.0)
        for (int64_t p = 0; p < A.cols; ++p) acc += to_tf32(A.at<float>(i, p)) * to_tf32(B.at<float>(p, j));
      C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
    }
  return ASSAY_OK;
}
