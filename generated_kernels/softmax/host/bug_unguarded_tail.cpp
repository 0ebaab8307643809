// PLANTED BUG (field-notes 2.11 out-of-bounds writes, 2.1 tails), host
// emulation of cuda/bug_unguarded_tail.cu: rows whose elements are adjacent
// (y's last stride 1) take a "vector" path that stores whole chunks of 32:
// the maximum and the sum are right (the tail is read masked, as -inf), but
// the last chunk also stores its lanes past the row end
// (exp(-inf - max) / sum = 0), into the row's padding, the start of the next
// row (which later overwrites it), or, for the row that ends highest in
// memory, past the end of y into the guard zone: at most 31 elements, 124
// bytes. Rows with a strided last dimension take a masked scalar path and
// are right, as are rows with n % 32 == 0.
// Expected verdict: out_of_bounds_write.
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
    float m = -INFINITY;
    for (int64_t i = 0; i < X.n; ++i) m = std::fmax(m, x[i * X.step]);
    float s = 0.0f;
    for (int64_t i = 0; i < X.n; ++i) s += std::exp(x[i * X.step] - m);
    // BUG: on the unit-stride path the store is not masked to i < n
    const int64_t stores = Y.step == 1 ? (X.n + 31) / 32 * 32 : X.n;
    for (int64_t i = 0; i < stores; ++i) {
      const float v = i < X.n ? x[i * X.step] : -INFINITY;
      y[i * Y.step] = std::exp(v - m) / s;
    }
  }
  return ASSAY_OK;
}
