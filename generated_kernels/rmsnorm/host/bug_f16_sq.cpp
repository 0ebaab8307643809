// PLANTED BUG (field-notes 2.6 fp16 accumulation): the squares are summed in
// an f16 accumulator (each partial sum rounded to binary16) while the spec
// claims f32 compute: the sum stagnates once f16's spacing passes the terms.
// Expected verdict: mismatch.
#include <assay/abi.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

constexpr int kMaxDims = 6;

// A tensor seen as rows: for x and y the last dimension is the row and every
// combination of the leading indices one row; for a per-row tensor (mean,
// rstd) every element is one row; weight and bias are one row. Row r is
// decomposed row-major into the leading coordinates. Strides in elements,
// 0 included (a broadcast weight).
struct View {
  char* base = nullptr;
  int lead = 0;
  int64_t size[kMaxDims] = {}, stride[kMaxDims] = {};
  int64_t n = 1, step = 0, count = 1;  // row length, its stride, number of rows
  View(const DLTensor& t, bool per_row) : base(static_cast<char*>(t.data) + t.byte_offset) {
    lead = per_row ? t.ndim : t.ndim - 1;
    for (int d = 0; d < lead; ++d) size[d] = t.shape[d], stride[d] = t.strides[d], count *= t.shape[d];
    if (!per_row) n = t.shape[t.ndim - 1], step = t.strides[t.ndim - 1];
  }
  template <class T>
  T* row(int64_t r) const {
    int64_t off = 0;
    for (int d = lead - 1; d >= 0; --d) {
      off += (r % size[d]) * stride[d];
      r /= size[d];
    }
    return reinterpret_cast<T*>(base) + off;
  }
};

bool is_float(const DLTensor& t, int bits) { return t.dtype.code == kDLFloat && t.dtype.bits == bits && t.dtype.lanes == 1; }
// The call is `op` with the contract's tensors (docs/ops/layernorm.md,
// rmsnorm.md): x, weight[, bias] and y of `bits`-bit floats, mean and rstd
// f32, shapes as the contract says.
bool norm_call(const assay_call* c, const char* op, int bits) {
  if (!c->op || std::strcmp(c->op, op) != 0) return false;
  const bool ln = std::strcmp(op, "layernorm") == 0;
  if (c->num_inputs != (ln ? 3 : 2) || c->num_outputs != (ln ? 3 : 1) || c->num_scalars != 1) return false;
  const DLTensor &x = c->inputs[0], &y = c->outputs[0];
  if (x.ndim < 1 || x.ndim > kMaxDims || y.ndim != x.ndim || !is_float(x, bits) || !is_float(y, bits)) return false;
  for (int d = 0; d < x.ndim; ++d)
    if (x.shape[d] != y.shape[d]) return false;
  for (int i = 1; i < c->num_inputs; ++i) {
    const DLTensor& v = c->inputs[i];
    if (v.ndim != 1 || v.shape[0] != x.shape[x.ndim - 1] || !is_float(v, bits)) return false;
  }
  for (int i = 1; i < c->num_outputs; ++i) {
    const DLTensor& s = c->outputs[i];
    if (s.ndim != x.ndim - 1 || !is_float(s, 32)) return false;
    for (int d = 0; d < s.ndim; ++d)
      if (s.shape[d] != x.shape[d]) return false;
  }
  return true;
}

// IEEE binary16 <-> float, round to nearest even, subnormals kept.
float half_to_float(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0 ? std::ldexp(float(m), -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(float(m | 1024), e - 25);
  return (h & 0x8000) ? -v : v;
}
uint16_t float_to_half(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  const uint32_t a = bits & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00;   // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00;  // 65520 and up round to Inf
  if (a < 0x38800000u) return sign | uint16_t(std::nearbyint(std::fabs(f) * 16777216.0f));  // subnormal: units of 2^-24
  const uint32_t m = a - 0x38000000u, keep = m >> 13, rest = m & 0x1fffu;
  return sign | uint16_t(keep + (rest > 0x1000u || (rest == 0x1000u && (keep & 1))));
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (!norm_call(call, "rmsnorm", 32)) return ASSAY_UNSUPPORTED;
  const View X(call->inputs[0], false), W(call->inputs[1], false), Y(call->outputs[0], false);
  const float eps = float(call->scalars[0]);
  const float* w = W.row<const float>(0);
  const int64_t n = X.n;
  for (int64_t r = 0; r < X.count; ++r) {
    const float* x = X.row<const float>(r);
    float* y = Y.row<float>(r);
    float q = 0.0f;
    for (int64_t i = 0; i < n; ++i) q = half_to_float(float_to_half(q + x[i * X.step] * x[i * X.step]));  // BUG
    const float rstd = 1.0f / std::sqrt(q / float(n) + eps);
    for (int64_t i = 0; i < n; ++i) y[i * Y.step] = x[i * X.step] * rstd * w[i * W.step];
  }
  return ASSAY_OK;
}
