// Host analog of cuda/bug_align_float4.cu.
// PLANTED BUG (field-notes 2.2, alignment): reads each row of a row-major A
// four floats at a time with _mm_load_ps, which requires 16-byte aligned
// addresses; a leading dimension that is not a multiple of 4, or an offset
// base, makes the load fault (SIGSEGV) in the worker.
// Expected verdict: crash.
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


}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) {
      float acc = 0.0f;
      int64_t p = 0;
      if (A.cs == 1)  // BUG: row-major is not enough; the address must be 16-byte aligned too
        for (; p + 4 <= A.cols; p += 4) {
          const __m128 a = _mm_load_ps(&A.at<float>(i, p));
          const __m128 b = _mm_set_ps(B.at<float>(p + 3, j), B.at<float>(p + 2, j), B.at<float>(p + 1, j), B.at<float>(p, j));
          float prod[4];
          _mm_storeu_ps(prod, _mm_mul_ps(a, b));
          acc += prod[0] + prod[1] + prod[2] + prod[3];
        }
      for (; p < A.cols; ++p) acc += A.at<float>(i, p) * B.at<float>(p, j);
      C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
    }
  return ASSAY_OK;
}
