// PLANTED BUG (field-notes 2b softmax: block sums without combining the
// warps; 2.8), host emulation of cuda/bug_cross_warp.cu: a 256-thread block
// per row, element i handled by thread i mod 256, whose warp is
// (i mod 256) / 32. Each warp reduces its own maximum and sum and uses them
// as if they were the row's: the cross-warp step is missing. Rows of at most
// 32 elements (one warp) are right; longer rows are normalized per warp.
// Expected verdict: mismatch (finite rows come out finite but wrong: each
// warp's share sums to 1; a row holding NaN or +inf, or a warp whose
// elements are all -inf, gives nan_mismatch instead).
#include <assay/abi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

constexpr int kMaxDims = 6;

// The rows of an N-D DLTensor: the last dimension is the row, every
// combination of the leading indices is one row. Strides in elements.
struct Rows {
  char* base;                      // data + byte_offset
  int lead;                        // number of leading dimensions, ndim - 1
  int64_t size[kMaxDims - 1];      // leading sizes
  int64_t stride[kMaxDims - 1];    // leading strides
  int64_t n, step, count;          // row length, the last dimension's stride, number of rows
  explicit Rows(const DLTensor& t) : base(static_cast<char*>(t.data) + t.byte_offset), lead(t.ndim - 1), count(1) {
    int64_t compact = 1;  // strides == NULL: compact row-major
    for (int d = t.ndim - 1; d >= 0; --d) {
      const int64_t s = t.strides ? t.strides[d] : compact;
      compact *= t.shape[d];
      if (d == t.ndim - 1) n = t.shape[d], step = s;
      else size[d] = t.shape[d], stride[d] = s, count *= t.shape[d];
    }
  }
  // Row r's first element: r decomposed row-major into the leading coordinates.
  template <class T> T* row(int64_t r) const {
    int64_t off = 0;
    for (int d = lead - 1; d >= 0; --d) {
      off += (r % size[d]) * stride[d];
      r /= size[d];
    }
    return reinterpret_cast<T*>(base) + off;
  }
};

bool is(const DLTensor& t, DLDataType d) {
  return t.ndim >= 1 && t.ndim <= kMaxDims && t.dtype.code == d.code && t.dtype.bits == d.bits && t.dtype.lanes == 1;
}
// True when the call is `op` with x of type `in` and y of type `out`, same shape.
bool softmax_of(const assay_call* call, const char* op, DLDataType in, DLDataType out) {
  if (!call->op || std::strcmp(call->op, op) != 0) return false;
  if (call->num_inputs != 1 || call->num_outputs != 1 || call->num_scalars != 0) return false;
  const DLTensor &x = call->inputs[0], &y = call->outputs[0];
  if (!is(x, in) || !is(y, out) || x.ndim != y.ndim) return false;
  return std::equal(x.shape, x.shape + x.ndim, y.shape);
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!softmax_of(call, "softmax", f32, f32)) return ASSAY_UNSUPPORTED;
  const Rows X(call->inputs[0]), Y(call->outputs[0]);
  for (int64_t r = 0; r < X.count; ++r) {
    const float* x = X.row<const float>(r);
    float* y = Y.row<float>(r);
    float m[8], s[8];
    std::fill(m, m + 8, -INFINITY);
    std::fill(s, s + 8, 0.0f);
    auto warp = [](int64_t i) { return int(i % 256 / 32); };
    for (int64_t i = 0; i < X.n; ++i) m[warp(i)] = std::fmax(m[warp(i)], x[i * X.step]);
    for (int64_t i = 0; i < X.n; ++i) s[warp(i)] += std::exp(x[i * X.step] - m[warp(i)]);
    // BUG: warp w's partials are never combined with the other warps'
    for (int64_t i = 0; i < X.n; ++i) y[i * Y.step] = std::exp(x[i * X.step] - m[warp(i)]) / s[warp(i)];
  }
  return ASSAY_OK;
}
