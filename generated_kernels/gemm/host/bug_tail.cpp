// PLANTED BUG (field-notes 2.1, tail bugs): blocked f32 GEMM (16x16 blocks of C,
// k in chunks of 16) with no tail handling in k: the last, partial k chunk is
// processed at full width with its indices clamped to k-1 instead of masked, so
// the last product A(i,k-1)*B(k-1,j) is added 16 - k%16 extra times. The m and
// n tails are clipped, so every element of C is written and no access leaves
// the tensors. Exact when k is a multiple of 16 (every power-of-two benchmark
// size), wrong otherwise.
// Expected verdict: mismatch.
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

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  const int64_t m = C.rows, n = C.cols, k = A.cols;
  constexpr int64_t T = 16;
  for (int64_t i0 = 0; i0 < m; i0 += T)
    for (int64_t j0 = 0; j0 < n; j0 += T) {
      const int64_t mb = std::min(T, m - i0), nb = std::min(T, n - j0);
      float acc[T][T] = {};
      for (int64_t p0 = 0; p0 < k; p0 += T)
        for (int64_t i = 0; i < mb; ++i)
          for (int64_t pp = 0; pp < T; ++pp) {
            const int64_t p = std::min(p0 + pp, k - 1);  // BUG: clamps instead of stopping at k
            for (int64_t j = 0; j < nb; ++j) acc[i][j] += A.at<float>(i0 + i, p) * B.at<float>(p, j0 + j);
          }
      for (int64_t i = 0; i < mb; ++i)
        for (int64_t j = 0; j < nb; ++j)
          C.at<float>(i0 + i, j0 + j) = float(combine(acc[i][j], alpha, beta, C.at<float>(i0 + i, j0 + j)));
    }
  return ASSAY_OK;
}
