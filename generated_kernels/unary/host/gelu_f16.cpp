// Correct host kernel: exact GELU with f16 storage, f32 compute: x widened
// exactly, y = x * 0.5 * (1 + erff(x / sqrt 2)) in f32, rounded once to f16
// (round to nearest even, subnormals kept, own bit code). Whether this is
// told apart from gelu_tanh depends on y's ulp: docs/ops/unary.md.
// Expected verdict: pass.

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

// IEEE binary16 <-> float by bits: widening is exact; narrowing rounds to
// nearest even, keeps subnormals, overflows to Inf, keeps NaN.
float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu;
  float v;
  if (e == 0) v = std::ldexp(float(m), -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = std::ldexp(float(m | 0x400u), int(e) - 25);
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits |= sign;
  std::memcpy(&v, &bits, 4);
  return v;
}
uint16_t float_to_half(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  const float a = std::fabs(f);
  if (a != a) return uint16_t(sign | 0x7e00u);
  if (a >= 65520.0f) return uint16_t(sign | 0x7c00u);  // past the largest half + half an ulp
  if (a < 6.103515625e-05f) {                          // subnormal: multiples of 2^-24
    return uint16_t(sign | uint16_t(std::nearbyint(a * 16777216.0f)));  // (exact product, ties to even)
  }
  int e;
  const float m = std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1)
  uint32_t q = uint32_t(std::nearbyint(std::ldexp(m, 11)));  // 11 bits, ties to even
  if (q == 2048) q = 1024, ++e;
  return uint16_t(sign | uint16_t((e + 14) << 10) | uint16_t(q - 1024));
}
constexpr DLDataType kF16{kDLFloat, 16, 1};

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (!unary_call(call, kF16, kF16)) return ASSAY_UNSUPPORTED;
  const Walk X(call->inputs[0]), Y(call->outputs[0]);
  const uint16_t* x = X.ptr<const uint16_t>();
  uint16_t* y = Y.ptr<uint16_t>();
  for (int64_t i = 0; i < X.count; ++i) {
    const float v = half_to_float(x[X.at(i)]);
    y[Y.at(i)] = float_to_half(v * 0.5f * (1.0f + std::erf(v * 0.70710678f)));
  }
  return ASSAY_OK;
}
