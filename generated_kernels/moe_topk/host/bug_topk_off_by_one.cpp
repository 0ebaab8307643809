// PLANTED BUG (field-notes 2b routing, 2.5 loop bounds): softmax_topk_f32
// whose selection loop runs one round too many (j <= k) and stores each
// round's pick at slot min(j, k - 1): the last slot ends with the (k+1)-th
// best expert instead of the k-th, and the weights are renormalized over that
// wrong set. When topk == experts the extra round finds nobody and nothing
// changes; every topk < experts token without a tie between the k-th and
// (k+1)-th best is wrong.
// Expected verdict: mismatch.
#include <assay/abi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

// A 2-D DLTensor [rows, cols]: element (r, c) lies r * rs + c * cs elements
// past data + byte_offset (strides NULL: compact row-major).
struct Mat {
  char* base;
  int64_t rows, cols, rs, cs;
  explicit Mat(const DLTensor& t)
      : base(static_cast<char*>(t.data) + t.byte_offset), rows(t.shape[0]), cols(t.shape[1]),
        rs(t.strides ? t.strides[0] : t.shape[1]), cs(t.strides ? t.strides[1] : 1) {}
  template <class T> T& at(int64_t r, int64_t c) const { return reinterpret_cast<T*>(base)[r * rs + c * cs]; }
};

constexpr DLDataType kF32{kDLFloat, 32, 1}, kI32{kDLInt, 32, 1};

bool is(const DLTensor& t, DLDataType d, int ndim) {
  return t.ndim == ndim && t.dtype.code == d.code && t.dtype.bits == d.bits && t.dtype.lanes == 1;
}
// topk when the call is moe_topk as this kernel takes it: logits of type
// `in` [tokens, experts], an f32 bias [experts] exactly when `bias`, f32
// weights and i32 indices [tokens, topk], the one scalar topk a whole number
// in [1, experts]; else -1 (the kernel then returns ASSAY_UNSUPPORTED).
int64_t moe_call(const assay_call* call, DLDataType in, bool bias) {
  if (!call || !call->op || std::strcmp(call->op, "moe_topk") != 0) return -1;
  if (call->num_inputs != (bias ? 2 : 1) || call->num_outputs != 2 || call->num_scalars != 1) return -1;
  if (!call->inputs || !call->outputs || !call->scalars) return -1;
  const DLTensor &x = call->inputs[0], &w = call->outputs[0], &i = call->outputs[1];
  if (!is(x, in, 2) || !is(w, kF32, 2) || !is(i, kI32, 2)) return -1;
  const int64_t tokens = x.shape[0], experts = x.shape[1];
  const double k = call->scalars[0];
  if (experts > INT32_MAX || !(k >= 1 && k <= double(experts)) || k != std::floor(k)) return -1;
  const int64_t topk = int64_t(k);
  if (w.shape[0] != tokens || w.shape[1] != topk || i.shape[0] != tokens || i.shape[1] != topk) return -1;
  if (bias && (!is(call->inputs[1], kF32, 1) || call->inputs[1].shape[0] != experts)) return -1;
  return topk;
}

// Floats as ordered unsigned integers: a larger key is a larger value, -0
// counts as +0, and NaNs sort above +inf or below -inf by their sign, so
// every token's experts are totally ordered and every slot gets an expert.
uint32_t key(float v) {
  if (v == 0.0f) v = 0.0f;
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
// An expert's place in the routing order: the higher rank wins; equal
// values go to the lower index.
uint64_t rank(float v, int64_t e) { return uint64_t(key(v)) << 32 | (0xFFFFFFFFu - uint32_t(e)); }

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  const int64_t k = moe_call(call, kF32, false);
  if (k < 0) return ASSAY_UNSUPPORTED;
  const Mat X(call->inputs[0]), W(call->outputs[0]), I(call->outputs[1]);
  const int64_t experts = X.cols;
  const int64_t tokens = X.rows;
  std::vector<float> p(static_cast<size_t>(experts));
  std::vector<char> taken(static_cast<size_t>(experts));
  std::vector<int64_t> pick(static_cast<size_t>(k));
  for (int64_t t = 0; t < tokens; ++t) {
    float m = -INFINITY;
    for (int64_t e = 0; e < experts; ++e) m = std::fmax(m, X.at<const float>(t, e));
    float sum = 0.0f;
    for (int64_t e = 0; e < experts; ++e) sum += std::exp(X.at<const float>(t, e) - m);
    for (int64_t e = 0; e < experts; ++e) p[e] = std::exp(X.at<const float>(t, e) - m) / sum, taken[e] = 0;
    // Rounds of argmax over the experts not taken yet. BUG: one round too
    // many (j <= k), its pick overwriting the last slot with the (k+1)-th best.
    for (int64_t j = 0; j <= k; ++j) {
      int64_t best = -1;
      for (int64_t e = 0; e < experts; ++e)
        if (!taken[e] && (best < 0 || rank(p[e], e) > rank(p[best], best))) best = e;
      if (best < 0) break;  // topk == experts: nobody is left for the extra round
      taken[best] = 1, pick[std::min(j, k - 1)] = best;
    }
    float chosen = 0.0f;
    for (int64_t j = 0; j < k; ++j) chosen += p[pick[j]];
    for (int64_t j = 0; j < k; ++j) {
      I.at<int32_t>(t, j) = int32_t(pick[j]);
      W.at<float>(t, j) = p[pick[j]] / chosen;
    }
  }
  return ASSAY_OK;
}
