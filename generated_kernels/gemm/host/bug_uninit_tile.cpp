// Host analog of cuda/bug_uninit_smem.cu.
//
// PLANTED BUG (field-notes 2.9, uninitialized memory): a 32x32-tiled GEMM whose
// tile buffers (static, reused across tiles and calls) are filled only where
// p < k, while the product loop runs over the whole tile: in a partial k tile
// the rest holds the previous tile's values. The buffers start as zeros, so
// the very first small-k call is right.
// Expected verdict: mismatch.
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
double combine(double ab, double alpha, double beta, float c0) {
  double r = alpha == 0.0 ? 0.0 : alpha * ab;
  if (beta != 0.0) r += beta * c0;
  return r;
}
constexpr int64_t T = 32;
float As[T][T], Bs[T][T];  // BUG: never cleared

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  const int64_t m = C.rows, n = C.cols, k = A.cols;
  for (int64_t i0 = 0; i0 < m; i0 += T)
    for (int64_t j0 = 0; j0 < n; j0 += T) {
      float acc[T][T] = {};
      for (int64_t p0 = 0; p0 < k; p0 += T) {
        for (int64_t r = 0; r < T; ++r)
          for (int64_t q = 0; q < T; ++q) {
            if (p0 + q < k) As[r][q] = i0 + r < m ? A.at<float>(i0 + r, p0 + q) : 0.0f;  // BUG: nothing written past k
            if (p0 + r < k) Bs[r][q] = j0 + q < n ? B.at<float>(p0 + r, j0 + q) : 0.0f;
          }
        for (int64_t r = 0; r < T; ++r)
          for (int64_t q = 0; q < T; ++q)
            for (int64_t p = 0; p < T; ++p) acc[r][q] += As[r][p] * Bs[p][q];
      }
      for (int64_t r = 0; r < T && i0 + r < m; ++r)
        for (int64_t q = 0; q < T && j0 + q < n; ++q)
          C.at<float>(i0 + r, j0 + q) = float(combine(acc[r][q], alpha, beta, C.at<float>(i0 + r, j0 + q)));
    }
  return ASSAY_OK;
}
