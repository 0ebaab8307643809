// HOSTILE (field-notes 2.5, loop-bound bugs: an infinite loop when k == 0):
// f32 GEMM that walks k in panels of up to KC = 64, panel depth kc = min(KC, k).
// The first panel applies the epilogue (beta*C0), the later ones accumulate
// alpha*A*B into C. So that k == 0 still writes C = beta*C0, the panel loop
// runs "at least once": p0 < max(k, 1). But the step is kc, which is 0 when
// k == 0, so p0 never moves and the loop never ends. Correct for every k > 0.
// Nothing out of bounds is touched while it spins (a panel of depth 0 reads no
// element of A or B), so it hangs rather than crashes. p0 is volatile, so the
// compiler keeps the loop (a side-effect-free infinite loop could be assumed to
// terminate and be removed). A checker without k == 0 cases passes it; one that
// calls candidates in its own process and without a timeout hangs with it.
// Needs the out-of-process worker (issue #3). Expected verdict: hang.
#include <assay/abi.h>

#include <algorithm>
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

constexpr int64_t KC = 64;

void gemm_panels(const Mat& A, const Mat& B, const Mat& C, double alpha, double beta) {
  const int64_t k = A.cols, kc = std::min(KC, k);
  // BUG: kc == 0 when k == 0, so p0 += kc never reaches max(k, 1).
  for (volatile int64_t p0 = 0; p0 < std::max<int64_t>(k, 1); p0 += kc) {
    const int64_t p_end = std::min<int64_t>(p0 + kc, k);
    const bool first = p0 == 0;
    for (int64_t i = 0; i < C.rows; ++i)
      for (int64_t j = 0; j < C.cols; ++j) {
        float acc = 0.0f;
        for (int64_t p = p0; p < p_end; ++p) acc += A.at<float>(i, p) * B.at<float>(p, j);
        float& c = C.at<float>(i, j);
        if (first)
          c = float(combine(acc, alpha, beta, c));  // alpha*A*B(panel) + beta*C0
        else if (alpha != 0.0)
          c = float(c + alpha * double(acc));
      }
  }
}

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  gemm_panels(A, B, C, call->scalars[0], call->scalars[1]);
  return ASSAY_OK;
}
