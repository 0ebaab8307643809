// Host analog of cuda/bug_sparse_fingerprint_cache.cu.
// PLANTED BUG (field-notes 2.14, cached results keyed on a partial input
// fingerprint): a naive f32 GEMM (f32 accumulation, double epilogue) that
// memoizes its last output under a "content fingerprint": the shape, strides
// and offsets, alpha and beta, and the bits of 32 evenly spaced elements of A
// and of B (logical element i*count/32, i = 0..31, row-major order; only when
// alpha != 0), plus 32 of C0 when beta != 0. Any fresh draw changes some
// sampled element, so calls with new inputs miss the cache; a change of a few
// elements between the samples does not, and replays the previous output.
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

constexpr int kSamples = 32;

// Appends the geometry of t and the bits of kSamples evenly spaced elements
// (none when `sample` is false or t is empty) to the fingerprint.
void fingerprint(std::vector<uint64_t>& fp, const DLTensor& t, bool sample) {
  const Mat x(t);
  for (int64_t v : {x.rows, x.cols, x.rs, x.cs, int64_t(t.byte_offset)}) fp.push_back(uint64_t(v));
  const int64_t count = x.rows * x.cols;
  if (!sample || count == 0) return;
  for (int i = 0; i < kSamples; ++i) {
    const int64_t e = i * count / kSamples;  // logical index, row-major
    uint32_t u;
    std::memcpy(&u, &x.at<float>(e / x.cols, e % x.cols), 4);  // bits, so NaNs compare too
    fp.push_back(u);
  }
}

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  if (C.rows == 0 || C.cols == 0) return ASSAY_OK;
  std::vector<uint64_t> key;
  uint64_t s[2];
  std::memcpy(s, call->scalars, sizeof s);
  key.assign(s, s + 2);
  fingerprint(key, call->inputs[0], alpha != 0.0);
  fingerprint(key, call->inputs[1], alpha != 0.0);
  fingerprint(key, call->outputs[0], beta != 0.0);
  static std::vector<uint64_t> saved_key;
  static std::vector<float> saved;  // m x n, row-major
  if (key == saved_key) {  // BUG: 32 samples say nothing about the other elements
    for (int64_t i = 0; i < C.rows; ++i)
      for (int64_t j = 0; j < C.cols; ++j) C.at<float>(i, j) = saved[i * C.cols + j];
    return ASSAY_OK;
  }
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) {
      float acc = 0.0f;
      if (alpha != 0.0)
        for (int64_t p = 0; p < A.cols; ++p) acc += A.at<float>(i, p) * B.at<float>(p, j);
      C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
    }
  saved_key = key;
  saved.resize(size_t(C.rows * C.cols));
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) saved[i * C.cols + j] = C.at<float>(i, j);
  return ASSAY_OK;
}
