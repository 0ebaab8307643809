// Correct host kernel under `compute: bf16`: every A and B element is rounded
// to bfloat16 (f32's exponent range, 7 fraction bits) to nearest even by bit
// code: f32 subnormals land on bf16's own subnormal grid (2^-133), values past
// bf16's largest finite, (2 - 2^-7) 2^127, become +-Inf, Inf stays Inf and NaN
// stays NaN. Products (exact in f32 but for underflow: 8 x 8 bits) and sums
// in f32, ascending k; the epilogue runs in double and rounds once to f32.
// Any strides and base offsets.
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

// f32 -> bf16 bits, round to nearest even on the 16 dropped bits (0x7fff plus
// the lowest kept bit carries exactly when rounding up); the carry runs into
// the exponent and, past the largest bf16, to Inf. NaN is kept a (quiet) NaN:
// the addition could carry a NaN with only low payload bits into Inf.
uint16_t bf16_from_float(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float bf16_to_float(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
float to_bf16(float x) { return bf16_to_float(bf16_from_float(x)); }

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
        for (int64_t p = 0; p < A.cols; ++p) acc += to_bf16(A.at<float>(i, p)) * to_bf16(B.at<float>(p, j));
      C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
    }
  return ASSAY_OK;
}
