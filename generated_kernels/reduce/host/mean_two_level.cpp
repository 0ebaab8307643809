// Correct host kernel: mean of each row in f32, deterministic two-level sum
// as a warp does it: 32 lanes each sum a strided share (i = lane, lane + 32,
// ...), then a butterfly tree over the 32 partials (offsets 16, 8, 4, 2, 1),
// then one division by n. Expected verdict: pass.
#include <assay/abi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

constexpr int kMaxDims = 6;

// One N-D DLTensor's strides (elements; NULL: compact row-major).
struct View {
  char* base;
  int nd;
  int64_t size[kMaxDims], stride[kMaxDims];
  explicit View(const DLTensor& t) : base(static_cast<char*>(t.data) + t.byte_offset), nd(t.ndim) {
    int64_t compact = 1;
    for (int d = nd - 1; d >= 0; --d) {
      size[d] = t.shape[d], stride[d] = t.strides ? t.strides[d] : compact;
      compact *= t.shape[d];
    }
  }
  // Element offset of index r over the first `dims` dimensions (row-major decomposition).
  int64_t offset(int64_t r, int dims) const {
    int64_t off = 0;
    for (int d = dims - 1; d >= 0; --d) {
      off += (r % size[d]) * stride[d];
      r /= size[d];
    }
    return off;
  }
};

// x [..., n] and y [...]: row r of x is element r of y, both found through
// the leading coordinates of r.
struct Rows {
  View x, y;
  int64_t n, step, count;
  Rows(const DLTensor& xt, const DLTensor& yt) : x(xt), y(yt), n(xt.shape[xt.ndim - 1]), count(1) {
    step = x.stride[x.nd - 1];
    for (int d = 0; d + 1 < x.nd; ++d) count *= x.size[d];
  }
  template <class T> const T* row(int64_t r) const { return reinterpret_cast<const T*>(x.base) + x.offset(r, x.nd - 1); }
  template <class T> T* out(int64_t r) const { return reinterpret_cast<T*>(y.base) + y.offset(r, y.nd); }
};

bool is(const DLTensor& t, DLDataType d) {
  return t.dtype.code == d.code && t.dtype.bits == d.bits && t.dtype.lanes == 1;
}
// True when the call is a reduce of x (type `in`, 1..6 dims) into y (type
// `out`, x's leading dimensions).
bool reduce_of(const assay_call* call, DLDataType in, DLDataType out) {
  if (!call->op || std::strcmp(call->op, "reduce") != 0) return false;
  if (call->num_inputs != 1 || call->num_outputs != 1 || call->num_scalars != 0) return false;
  const DLTensor &x = call->inputs[0], &y = call->outputs[0];
  if (!is(x, in) || !is(y, out) || x.ndim < 1 || x.ndim > kMaxDims || y.ndim != x.ndim - 1) return false;
  return std::equal(y.shape, y.shape + y.ndim, x.shape);
}

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (!reduce_of(call, kF32, kF32)) return ASSAY_UNSUPPORTED;
  const Rows R(call->inputs[0], call->outputs[0]);
  for (int64_t r = 0; r < R.count; ++r) {
    const float* x = R.row<float>(r);
    float lane[32] = {};
    for (int64_t i = 0; i < R.n; ++i) lane[i % 32] += x[i * R.step];
    for (int off = 16; off > 0; off /= 2)
      for (int l = 0; l < off; ++l) lane[l] += lane[l + off];
    *R.out<float>(r) = lane[0] / float(R.n);  // n = 0: 0/0 = NaN, as the contract says
  }
  return ASSAY_OK;
}
