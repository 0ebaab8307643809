// Correct host kernel under its declared contract: the same flushing naive f32
// GEMM as bug_fast_math.cpp, with `subnormals: flush` in its spec.
// Expected verdict: pass.
#include <assay/abi.h>

#include <cstdint>
#include <xmmintrin.h>

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
double combine(double ab, double alpha, double beta, float c0) {
  double r = alpha == 0.0 ? 0.0 : alpha * ab;
  if (beta != 0.0) r += beta * c0;
  return r;
}

// Sets flush-to-zero and denormals-are-zero in MXCSR for the duration of the
// call (what -ffast-math's startup code does for a whole program), and
// restores it: the worker process may run other code afterwards.
struct FlushSubnormals {
  unsigned saved = _mm_getcsr();
  FlushSubnormals() { _mm_setcsr(saved | 0x8040u); }  // FTZ (bit 15) | DAZ (bit 6)
  ~FlushSubnormals() { _mm_setcsr(saved); }
};

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  const FlushSubnormals ftz;
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < A.cols; ++p) acc += A.at<float>(i, p) * B.at<float>(p, j);
      C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
    }
  return ASSAY_OK;
}
