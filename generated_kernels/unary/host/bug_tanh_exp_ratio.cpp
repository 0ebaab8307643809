// PLANTED BUG (field-notes 2.6, 2.7): tanh as (e^2x - 1) / (e^2x + 1). For
// small |x| the subtraction e^2x - 1 cancels (at x = 1e-3 a few hundred ulps
// off), and past x = 44.4 both exps overflow and inf / inf gives NaN where
// tanh is 1. The sweep's first failing case is a small |x| one.
// Expected verdict: mismatch.

#include <assay/abi.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

constexpr int kMaxDims = 6;

// An N-D DLTensor walked element by element: flat index i decomposed
// row-major into coordinates, each times its stride (elements).
struct Walk {
  char* base;  // data + byte_offset
  int ndim;
  int64_t shape[kMaxDims], stride[kMaxDims];
  int64_t count = 1;
  explicit Walk(const DLTensor& t) : base(static_cast<char*>(t.data) + t.byte_offset), ndim(t.ndim) {
    int64_t compact = 1;  // strides == NULL: compact row-major
    for (int d = t.ndim - 1; d >= 0; --d) {
      shape[d] = t.shape[d], stride[d] = t.strides ? t.strides[d] : compact;
      compact *= t.shape[d], count *= t.shape[d];
    }
  }
  int64_t at(int64_t i) const {
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      off += (i % shape[d]) * stride[d];
      i /= shape[d];
    }
    return off;
  }
  // Compact row-major: element i at offset i (sizes of 1 may have any stride).
  bool compact() const {
    int64_t want = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      if (shape[d] != 1 && stride[d] != want) return false;
      want *= shape[d];
    }
    return true;
  }
  template <class T> T* ptr() const { return reinterpret_cast<T*>(base); }
};

bool is(const DLTensor& t, DLDataType d) {
  return t.ndim >= 1 && t.ndim <= kMaxDims && t.dtype.code == d.code && t.dtype.bits == d.bits && t.dtype.lanes == 1;
}
// True when the call is op "unary" with x of type `in` and y of type `out`, same shape.
bool unary_call(const assay_call* call, DLDataType in, DLDataType out) {
  if (!call->op || std::strcmp(call->op, "unary") != 0) return false;
  if (call->num_inputs != 1 || call->num_outputs != 1 || call->num_scalars != 0) return false;
  const DLTensor &x = call->inputs[0], &y = call->outputs[0];
  if (!is(x, in) || !is(y, out) || x.ndim != y.ndim) return false;
  for (int d = 0; d < x.ndim; ++d)
    if (x.shape[d] != y.shape[d]) return false;
  return true;
}

constexpr DLDataType kF32{kDLFloat, 32, 1};

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (!unary_call(call, kF32, kF32)) return ASSAY_UNSUPPORTED;
  const Walk X(call->inputs[0]), Y(call->outputs[0]);
  const float* x = X.ptr<const float>();
  float* y = Y.ptr<float>();
  for (int64_t i = 0; i < X.count; ++i) {
    const float e = std::exp(2.0f * x[X.at(i)]);
    y[Y.at(i)] = (e - 1.0f) / (e + 1.0f);  // BUG: inf / inf for large x
  }
  return ASSAY_OK;
}
