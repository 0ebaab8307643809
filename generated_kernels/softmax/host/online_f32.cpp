// Correct host kernel: single-pass online f32 softmax (Milakov & Gimelshein).
// Each row is read once to build 8 interleaved running states (maximum and
// sum of exp(x - max), the sum rescaled by exp(old max - new max) whenever
// the maximum grows), which are then merged pairwise as a GPU would merge
// its threads' states; a last pass writes exp(x - max) / sum. The merge
// guards the state whose maximum is still -inf (nothing seen, or only
// -inf): it stays empty instead of computing exp(-inf - -inf) = NaN. The
// maximum propagates NaN, so a NaN anywhere makes the row NaN; +inf gives
// inf - inf = NaN; an all -inf row keeps max -inf and sum 0, so the last
// pass gives exp(NaN) / 0 = NaN, the IEEE answer. f32 arithmetic, glibc expf.
// Numerically: each term is rescaled once per growth of its lane's maximum
// and the 8 lane sums are combined in a tree.
// Expected verdict: pass.
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

// A running state of the online softmax (Milakov & Gimelshein): the maximum
// seen so far and the sum of exp(x - m) over what was seen.
struct State {
  float m, s;
};
// NaN-propagating maximum: a NaN anywhere makes the row's maximum NaN.
float nan_max(float a, float b) { return (a > b || a != a) ? a : b; }
// Combines two states, rescaling each sum to the common maximum. When that
// maximum is -inf nothing but -inf was seen (both sums are 0): the empty
// state is returned instead of computing exp(-inf - -inf) = NaN.
State merge(State a, State b) {
  const float m = nan_max(a.m, b.m);
  if (m == -INFINITY) return {m, 0.0f};
  return {m, a.s * std::exp(a.m - m) + b.s * std::exp(b.m - m)};
}

constexpr int kLanes = 8;  // interleaved running states, merged pairwise at the end

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!softmax_of(call, "softmax", f32, f32)) return ASSAY_UNSUPPORTED;
  const Rows X(call->inputs[0]), Y(call->outputs[0]);
  for (int64_t r = 0; r < X.count; ++r) {
    const float* x = X.row<const float>(r);
    float* y = Y.row<float>(r);
    State lane[kLanes];
    for (State& l : lane) l = {-INFINITY, 0.0f};
    for (int64_t i = 0; i < X.n; ++i) lane[i % kLanes] = merge(lane[i % kLanes], {x[i * X.step], 1.0f});
    for (int w = kLanes / 2; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) lane[l] = merge(lane[l], lane[l + w]);
    const State t = lane[0];
    for (int64_t i = 0; i < X.n; ++i) y[i * Y.step] = std::exp(x[i * X.step] - t.m) / t.s;
  }
  return ASSAY_OK;
}
