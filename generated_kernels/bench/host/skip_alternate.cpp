// PLANTED CHEAT (issue #16, skipped calls): honest f32 GEMM for the first 8
// calls; from the 9th on, every other call (10, 12, ...) returns ASSAY_OK at
// once without writing C. Caught by assay bench's poisoned outputs: C holds
// NaN bits before every timed call, and every capture is checked.
// Calls 1-8 of each run of consecutive calls on identical tensors (data
// pointers, byte offsets, shapes, strides) are honest; any change restarts
// the count, so the gate's 4-call cases never see the cheat.
// Expected verdict: pass (gate); bench: unwritten_output.
#include <assay/abi.h>

#include <array>
#include <cstdint>

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

// Element (i, j) of the result, BLAS semantics: alpha == 0 skips A*B,
// beta == 0 never reads C0 (C may hold NaN poison).
float element(const Mat& A, const Mat& B, const Mat& C, double alpha, double beta, int64_t i, int64_t j) {
  double r = 0.0;
  if (alpha != 0.0) {
    float acc = 0.0f;
    for (int64_t p = 0; p < A.cols; ++p) acc += A.at(i, p) * B.at(p, j);
    r = alpha * acc;
  }
  if (beta != 0.0) r += beta * C.at(i, j);
  return float(r);
}

// The honest GEMM: C = alpha*A*B + beta*C0, f32 sums in ascending k, any strides.
void gemm(const Mat& A, const Mat& B, const Mat& C, double alpha, double beta) {
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) C.at(i, j) = element(A, B, C, alpha, beta, i, j);
}

// This call's place in the current run of consecutive calls on identical
// tensors (data pointer, byte offset, shape and strides of A, B and C): 1 for
// the first call after any difference from the previous call.
int64_t streak(const assay_call* call) {
  static std::array<int64_t, 18> last{};
  static int64_t count = 0;
  std::array<int64_t, 18> key{};
  size_t n = 0;
  const DLTensor* const tensors[3] = {&call->inputs[0], &call->inputs[1], &call->outputs[0]};
  for (const DLTensor* t : tensors) {
    key[n++] = int64_t(reinterpret_cast<intptr_t>(t->data));
    key[n++] = int64_t(t->byte_offset);
    for (int d = 0; d < 2; ++d) key[n++] = t->shape[d];
    for (int d = 0; d < 2; ++d) key[n++] = t->strides ? t->strides[d] : -1;
  }
  count = count > 0 && key == last ? count + 1 : 1;
  last = key;
  return count;
}

}  // namespace

int assay_run(const assay_call* call) {
  if (!is_f32_gemm(call)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  const int64_t n = streak(call);
  if (n >= 9 && n % 2 == 0) return ASSAY_OK;  // CHEAT: claims success, C untouched
  gemm(A, B, C, alpha, beta);
  return ASSAY_OK;
}
