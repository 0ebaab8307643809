// Host analog of cuda/bug_fingerprint_cache.cu.
// PLANTED BUG (field-notes 2.14, cached results keyed on an input fingerprint):
// the result is memoized under (m, n, k, A(0,0)); fresh inputs that agree
// at that element get the earlier answer.
// Expected verdict: cached_result.
#include <assay/abi.h>

#include <cstdint>
#include <cstring>
#include <vector>

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

struct Key {
  int64_t m, n, k;
  uint32_t a00;  // bits, so NaN keys compare too
  bool operator==(const Key& o) const { return m == o.m && n == o.n && k == o.k && a00 == o.a00; }
};
uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  Key key{C.rows, C.cols, A.cols, 0};
  if (A.cols > 0 && C.rows > 0) key.a00 = bits(A.at<float>(0, 0));
  static Key saved_key{-1, -1, -1, 0};
  static std::vector<float> saved;  // m x n, row-major
  if (key == saved_key) {  // BUG: one element says nothing about the rest
    for (int64_t i = 0; i < C.rows; ++i)
      for (int64_t j = 0; j < C.cols; ++j) C.at<float>(i, j) = saved[i * C.cols + j];
    return ASSAY_OK;
  }
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) {
      float acc = 0.0f;
      for (int64_t p = 0; p < A.cols; ++p) acc += A.at<float>(i, p) * B.at<float>(p, j);
      C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
    }
  saved_key = key;
  saved.resize(size_t(C.rows * C.cols));
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) saved[i * C.cols + j] = C.at<float>(i, j);
  return ASSAY_OK;
}
