// Host analog of cuda/bug_oob_tile_n.cu.
// PLANTED BUG (field-notes 2.11, out-of-bounds writes): columns are processed
// in tiles of 32 and every tile is stored whole, so up to 31 values land past
// the end of each row (the next row, the padding, or past C).
// Expected verdict: out_of_bounds_write.
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

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < (C.cols + T - 1) / T * T  /* BUG: the whole last tile is stored */; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < A.cols && j < C.cols; ++p) acc += A.at<float>(i, p) * B.at<float>(p, j);
      C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
    }
  return ASSAY_OK;
}
