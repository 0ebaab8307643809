// Correct host kernel: softmax top-k routing of bf16 logits without forming
// the softmax. exp is monotone, so the top-k of p is the top-k of the raw
// logits: one pass keeps the k best (logit, lowest index) ranks in descending
// order by insertion (sorted: true; exact ties to the lowest index); then,
// with m the largest logit, weights = exp(x_i - m) / sum over the chosen of
// exp(x_j - m), which is p_i / (sum of the chosen p) with the full softmax sum
// cancelled (renormalize: true). bf16 widens exactly to f32 (its bits are the
// f32's top half); the arithmetic is f32 (std::exp). Undefined tokens (NaN,
// +inf, all -inf) get distinct experts and NaN weights in every slot.
// Expected verdict: pass.
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

constexpr DLDataType kBF16{kDLBfloat, 16, 1};

// bf16 widens to f32 exactly: its bits are the f32's top half.
float widen(uint16_t h) {
  const uint32_t b = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
int64_t expert_of(uint64_t r) { return int64_t(0xFFFFFFFFu - uint32_t(r)); }

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  const int64_t k = moe_call(call, kBF16, false);
  if (k < 0) return ASSAY_UNSUPPORTED;
  const Mat X(call->inputs[0]), W(call->outputs[0]), I(call->outputs[1]);
  const int64_t experts = X.cols;
  std::vector<uint64_t> best(static_cast<size_t>(k));
  std::vector<float> q(static_cast<size_t>(k));
  for (int64_t t = 0; t < X.rows; ++t) {
    // The k best ranks of the raw logits, kept in descending order by insertion.
    int64_t n = 0;
    for (int64_t e = 0; e < experts; ++e) {
      const uint64_t r = rank(widen(X.at<const uint16_t>(t, e)), e);
      if (n == k && r <= best[k - 1]) continue;
      int64_t j = n < k ? n++ : k - 1;  // a free slot, or the weakest one dropped
      for (; j > 0 && best[j - 1] < r; --j) best[j] = best[j - 1];
      best[j] = r;
    }
    // exp(x - m) over the chosen only, m the largest logit: the full softmax
    // sum cancels in the renormalized weights and is never formed.
    const float m = widen(X.at<const uint16_t>(t, expert_of(best[0])));
    float chosen = 0.0f;
    for (int64_t j = 0; j < k; ++j) chosen += q[j] = std::exp(widen(X.at<const uint16_t>(t, expert_of(best[j]))) - m);
    for (int64_t j = 0; j < k; ++j) {
      I.at<int32_t>(t, j) = int32_t(expert_of(best[j]));
      W.at<float>(t, j) = q[j] / chosen;
    }
  }
  return ASSAY_OK;
}
