// PLANTED BUG (field-notes 2.2 alignment): SiLU with a float4 path taken for
// every compact pair of tensors, which assumes both bases are 16-byte
// aligned. On the GPU a misaligned float4 load faults (cuda_error); on the
// host the emulation loads and stores the aligned vectors the addresses
// round down to, as a hardware that ignored the low bits would: with x
// offset by 1..3 elements every element is read from 1..3 places earlier,
// and with y offset the stores land before y's first element (in the offset
// region the harness guards). The first misaligned case offsets x.
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

float silu(float v) { return v / (1.0f + std::exp(-v)); }
// The 16-byte vector holding p, as an aligned float4 access sees it.
template <class T> T* round_down(T* p) { return reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(15)); }

extern "C" int assay_run(const assay_call* call) {
  if (!unary_call(call, kF32, kF32)) return ASSAY_UNSUPPORTED;
  const Walk X(call->inputs[0]), Y(call->outputs[0]);
  const float* x = X.ptr<const float>();
  float* y = Y.ptr<float>();
  if (X.compact() && Y.compact()) {
    int64_t i = 0;
    for (; i + 4 <= X.count; i += 4) {  // BUG: no alignment check
      float v[4];
      std::memcpy(v, round_down(x + i), sizeof v);
      for (float& e : v) e = silu(e);
      std::memcpy(round_down(y + i), v, sizeof v);
    }
    for (; i < X.count; ++i) y[i] = silu(x[i]);
    return ASSAY_OK;
  }
  for (int64_t i = 0; i < X.count; ++i) y[Y.at(i)] = silu(x[X.at(i)]);
  return ASSAY_OK;
}
