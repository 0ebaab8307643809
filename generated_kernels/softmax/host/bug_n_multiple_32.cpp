// PLANTED BUG (field-notes 2b softmax: warp reduction assuming n % 32 == 0;
// 2.1 tail bugs), host emulation of cuda/bug_n_multiple_32.cu: the row is
// processed in whole chunks of 32 only (n / 32 of them), for the maximum,
// the sum and the stores alike. The last n % 32 elements are neither reduced
// nor written, and a row shorter than 32 is not touched at all.
// Why not mismatch: the elements the kernel skips are never stored, so they
// still hold the NaN poison the harness painted before the call, and the
// judge reports poison left in the output as unwritten_output before it
// compares values (every case with n % 32 != 0 fails this way on its first
// call). Rows with n % 32 == 0 are right.
// Expected verdict: unwritten_output.
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
    const int64_t whole = X.n / 32 * 32;  // BUG: the tail n % 32 is dropped
    float m = -INFINITY;
    for (int64_t i = 0; i < whole; ++i) m = std::fmax(m, x[i * X.step]);
    float s = 0.0f;
    for (int64_t i = 0; i < whole; ++i) s += std::exp(x[i * X.step] - m);
    for (int64_t i = 0; i < whole; ++i) y[i * Y.step] = std::exp(x[i * X.step] - m) / s;
  }
  return ASSAY_OK;
}
