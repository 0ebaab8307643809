// HOSTILE (a launcher that aborts): f32 GEMM whose inner loop is unrolled by
// two along k. It is correct for even k; instead of returning
// ASSAY_UNSUPPORTED (or declaring `requires: k % 2 == 0`) for odd k it
// "asserts" its assumption with abort(), so the process dies by SIGABRT. A
// checker that draws only even (say power-of-two) k passes it; one that calls
// candidates in its own process is killed by the first odd k.
// Needs the out-of-process worker (issue #3). Expected verdict: crash.
#include <assay/abi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

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

// k unrolled by two: two partial sums, added at the end.
void gemm_unroll2(const Mat& A, const Mat& B, const Mat& C, double alpha, double beta) {
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) {
      float acc0 = 0.0f, acc1 = 0.0f;
      for (int64_t p = 0; p < A.cols; p += 2) {
        acc0 += A.at<float>(i, p) * B.at<float>(p, j);
        acc1 += A.at<float>(i, p + 1) * B.at<float>(p + 1, j);
      }
      C.at<float>(i, j) = float(combine(double(acc0 + acc1), alpha, beta, C.at<float>(i, j)));
    }
}

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  if (A.cols % 2 != 0) {  // BUG: should return ASSAY_UNSUPPORTED (or be in the spec's requires)
    std::fprintf(stderr, "abort_launcher: k = %lld is odd; this kernel needs even k\n", (long long)A.cols);
    std::abort();
  }
  gemm_unroll2(A, B, C, call->scalars[0], call->scalars[1]);
  return ASSAY_OK;
}
