// HOSTILE (a dimension property that crashes: n % 4 != 0): f32 GEMM that
// computes each row of C four columns at a time, and hands the last n % 4
// columns to a remainder routine picked from a table indexed by n % 4. Only
// the entry for 0 (nothing left over) was ever filled in; the entries for 1,
// 2 and 3 columns are null, so any n that is not a multiple of 4 calls a null
// function pointer: SIGSEGV. A checker that draws only square powers of two
// passes it; one that calls candidates in its own process dies with it.
// Correct (the naive order) whenever n % 4 == 0, and for m == 0 (no row is
// visited). Needs the out-of-process worker (issue #3). Expected verdict: crash.
#include <assay/abi.h>

#include <cstdint>

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

// The epilogue, BLAS semantics: alpha == 0 skips A*B (0*Inf is not NaN there),
// beta == 0 never reads C0 (C may hold NaN poison).
double combine(double ab, double alpha, double beta, const float& c0) {
  double r = alpha == 0.0 ? 0.0 : alpha * ab;
  if (beta != 0.0) r += beta * c0;
  return r;
}

// Columns j0 .. j0 + w - 1 of row i.
void columns(const Mat& A, const Mat& B, const Mat& C, int64_t i, int64_t j0, int64_t w, double alpha, double beta) {
  for (int64_t j = j0; j < j0 + w; ++j) {
    float acc = 0.0f;
    for (int64_t p = 0; p < A.cols; ++p) acc += A.at<float>(i, p) * B.at<float>(p, j);
    C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
  }
}

using Remainder = void (*)(const Mat&, const Mat&, const Mat&, int64_t, int64_t, double, double);
void no_remainder(const Mat&, const Mat&, const Mat&, int64_t, int64_t, double, double) {}
// BUG: the routines for 1, 2 and 3 leftover columns were never written.
Remainder volatile remainder[4] = {no_remainder, nullptr, nullptr, nullptr};

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  const int64_t body = C.cols / 4 * 4;
  for (int64_t i = 0; i < C.rows; ++i) {
    for (int64_t j0 = 0; j0 < body; j0 += 4) columns(A, B, C, i, j0, 4, alpha, beta);
    remainder[C.cols % 4](A, B, C, i, body, alpha, beta);  // null unless n % 4 == 0: SIGSEGV
  }
  return ASSAY_OK;
}
