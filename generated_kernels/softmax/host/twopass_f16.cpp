// Correct host kernel: f16 in, f16 out, f32 compute. Each element is widened
// exactly to float (own bit code, subnormals kept), the two-pass softmax
// runs in f32 with glibc expf, and each result is rounded once to f16, to
// nearest even, subnormal results kept (own bit code, no compiler _Float16).
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

// IEEE binary16 <-> float by bit manipulation: exact widening (subnormals,
// infinities and NaN kept), narrowing rounded to nearest even with
// subnormal results kept and overflow to infinity.
float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return bits_to_float(sign | 0x7f800000u | (m << 13));  // Inf, NaN (payload kept)
  if (e == 0) {                                                        // zero, subnormal: m * 2^-24 exactly
    const float v = std::ldexp(float(m), -24);
    return sign ? -v : v;
  }
  return bits_to_float(sign | ((e + 112) << 23) | (m << 13));  // rebias 15 -> 127
}
uint16_t float_to_half(float f) {
  const uint32_t u = float_to_bits(f), ax = u & 0x7fffffffu;
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  if (ax > 0x7f800000u) return sign | 0x7e00u | uint16_t((ax >> 13) & 0x3ffu);  // NaN stays NaN
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to Inf
  if (ax < 0x38800000u) {                          // below 2^-14: a subnormal half (or zero)
    if (ax < 0x33000000u) return sign;             // below 2^-25: rounds to zero
    const uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;                // f = m * 2^(e-150); units of 2^-24: shift right by 126 - e
    uint32_t q = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;  // may carry into the smallest normal: still right
    return sign | uint16_t(q);
  }
  const uint32_t r = ax - 0x38000000u;  // rebias 127 -> 15
  uint32_t q = r >> 13;
  const uint32_t rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) ++q;  // a carry moves into the exponent, as it should
  return sign | uint16_t(q);
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  const DLDataType f16{kDLFloat, 16, 1};
  if (!softmax_of(call, "softmax", f16, f16)) return ASSAY_UNSUPPORTED;
  const Rows X(call->inputs[0]), Y(call->outputs[0]);
  for (int64_t r = 0; r < X.count; ++r) {
    const uint16_t* x = X.row<const uint16_t>(r);
    uint16_t* y = Y.row<uint16_t>(r);
    float m = -INFINITY;
    for (int64_t i = 0; i < X.n; ++i) m = std::fmax(m, half_to_float(x[i * X.step]));
    float s = 0.0f;
    for (int64_t i = 0; i < X.n; ++i) s += std::exp(half_to_float(x[i * X.step]) - m);
    for (int64_t i = 0; i < X.n; ++i) y[i * Y.step] = float_to_half(std::exp(half_to_float(x[i * X.step]) - m) / s);
  }
  return ASSAY_OK;
}
