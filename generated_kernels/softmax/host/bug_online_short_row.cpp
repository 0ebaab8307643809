// PLANTED BUG (field-notes 2b softmax: online softmax NaN on short rows),
// host emulation of cuda/bug_online_short_row.cu: online softmax over 32
// "lanes" (lane l takes the elements i = l mod 32), each starting at running
// max -inf and sum 0, merged by a shuffle butterfly (lane l with l ^ 16, 8,
// 4, 2, 1), with no guard for two states whose maxima are both -inf: the
// merge computes s_a * exp(-inf - -inf) = 0 * NaN = NaN. On a row of at most
// 16 elements some lanes are idle in pairs, their merge is NaN and the NaN
// reaches every lane, so the whole row comes out NaN; the same happens when
// a lane's first elements are -inf. Rows of 17 or more finite elements are
// right.
// Expected verdict: nan_mismatch.
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

// A running state of the online softmax: the maximum seen and the sum of
// exp(x - m) over what was seen.
struct State {
  float m, s;
};
// Combines two states, rescaling each sum to the common maximum.
// BUG: no guard for m == -inf, where exp(-inf - -inf) = NaN.
State merge(State a, State b) {
  const float m = std::fmax(a.m, b.m);
  return {m, a.s * std::exp(a.m - m) + b.s * std::exp(b.m - m)};
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!softmax_of(call, "softmax", f32, f32)) return ASSAY_UNSUPPORTED;
  const Rows X(call->inputs[0]), Y(call->outputs[0]);
  for (int64_t r = 0; r < X.count; ++r) {
    const float* x = X.row<const float>(r);
    float* y = Y.row<float>(r);
    State lane[32];
    for (State& l : lane) l = {-INFINITY, 0.0f};  // idle lanes keep this state
    for (int64_t i = 0; i < X.n; ++i) lane[i % 32] = merge(lane[i % 32], {x[i * X.step], 1.0f});
    for (int o = 16; o >= 1; o /= 2) {  // butterfly: every lane ends with the row's state
      State next[32];
      for (int l = 0; l < 32; ++l) next[l] = merge(lane[l], lane[l ^ o]);
      std::copy(next, next + 32, lane);
    }
    const State t = lane[0];
    for (int64_t i = 0; i < X.n; ++i) y[i * Y.step] = std::exp(x[i * X.step] - t.m) / t.s;
  }
  return ASSAY_OK;
}
