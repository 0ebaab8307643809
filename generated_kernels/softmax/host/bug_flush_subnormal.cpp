// PLANTED BUG (field-notes 2b softmax: flushed subnormal outputs; 2.6): the
// two-pass f32 softmax run with FTZ and DAZ set in MXCSR (what -ffast-math's
// startup code does), so every output below FLT_MIN (about 1.2e-38) comes out
// 0, while the spec claims `subnormals: ieee`. ftz_f32.cpp is the same
// arithmetic with the honest `subnormals: flush`. Rows without subnormal
// outputs are right.
// Expected verdict: mismatch (0 where a subnormal is expected: finite but
// wrong).
#include <assay/abi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <xmmintrin.h>

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

// Sets flush-to-zero and denormals-are-zero in MXCSR for the duration of the
// call (what -ffast-math's startup code does for a whole program), and
// restores it: the worker process may run other code afterwards.
struct FlushSubnormals {
  unsigned saved = _mm_getcsr();
  FlushSubnormals() { _mm_setcsr(saved | 0x8040u); }  // FTZ (bit 15) | DAZ (bit 6)
  ~FlushSubnormals() { _mm_setcsr(saved); }
};

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!softmax_of(call, "softmax", f32, f32)) return ASSAY_UNSUPPORTED;
  const Rows X(call->inputs[0]), Y(call->outputs[0]);
  const FlushSubnormals flush;  // BUG: flushes, under a subnormals: ieee claim
  for (int64_t r = 0; r < X.count; ++r) {
    const float* x = X.row<const float>(r);
    float* y = Y.row<float>(r);
    float m = -INFINITY;
    for (int64_t i = 0; i < X.n; ++i) m = std::fmax(m, x[i * X.step]);
    float s = 0.0f;
    for (int64_t i = 0; i < X.n; ++i) s += std::exp(x[i * X.step] - m);
    for (int64_t i = 0; i < X.n; ++i) y[i * Y.step] = std::exp(x[i * X.step] - m) / s;
  }
  return ASSAY_OK;
}
