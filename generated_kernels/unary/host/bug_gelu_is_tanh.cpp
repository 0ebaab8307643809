// PLANTED BUG (field-notes 2b, activations): declares the exact GELU (`fn:
// gelu`) but computes the tanh approximation, 0.5 x (1 + tanhf(sqrt(2/pi)
// (x + 0.044715 x^3))). The two differ by up to 4.7e-4 (at |x| = 2.70):
// thousands of f32 ulps, caught by the tolerance on the band recipe and
// on mixed values.
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
    const float v = x[X.at(i)];
    y[Y.at(i)] = 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));  // BUG: not erf
  }
  return ASSAY_OK;
}
