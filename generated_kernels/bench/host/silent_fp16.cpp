// PLANTED CHEAT (issue #16, silent half precision): f32 GEMM that, from its
// first call on, rounds every A and B element to half's precision (11
// significant bits, to nearest even; f32's exponent range kept) and sums in
// f32, while its spec claims compute f32. Caught before any timing: at small k by
// the gate's per-element bound; at the benched k of thousands, where that
// bound admits half's errors, by the RMS rule of the bench's judged calls
// (docs/tolerance.md, "The aggregate precision rule").
// Expected verdict: mismatch (gate); bench: mismatch.
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
  float& at(int64_t r, int64_t c) const { return reinterpret_cast<float*>(base)[r * rs + c * cs]; }
};

bool is_f32_matrix(const DLTensor& t) {
  return t.ndim == 2 && t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1;
}
// True when the call is an f32 GEMM: inputs {A, B}, output {C}, scalars {alpha, beta}.
bool is_f32_gemm(const assay_call* call) {
  return call->num_inputs == 2 && call->num_outputs == 1 && call->num_scalars == 2 &&
         is_f32_matrix(call->inputs[0]) && is_f32_matrix(call->inputs[1]) && is_f32_matrix(call->outputs[0]);
}

// x rounded to 11 significant bits, to nearest even (ties to an even 11th
// bit); Inf and NaN pass unchanged, a carry past the largest float gives Inf.
float round_to_half_precision(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7F800000u) != 0x7F800000u) {
    u += 0x0FFFu + ((u >> 13) & 1u);
    u &= ~0x1FFFu;
  }
  std::memcpy(&x, &u, sizeof x);
  return x;
}

}  // namespace

int assay_run(const assay_call* call) {
  if (!is_f32_gemm(call)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) {
      double r = 0.0;
      if (alpha != 0.0) {
        float acc = 0.0f;  // CHEAT: the products see only half's precision
        for (int64_t p = 0; p < A.cols; ++p)
          acc += round_to_half_precision(A.at(i, p)) * round_to_half_precision(B.at(p, j));
        r = alpha * acc;
      }
      if (beta != 0.0) r += beta * C.at(i, j);
      C.at(i, j) = float(r);
    }
  return ASSAY_OK;
}
