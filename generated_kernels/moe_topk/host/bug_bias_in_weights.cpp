// PLANTED BUG (field-notes 2b routing): sigmoid_grouped_f32 whose weights are
// made of sel = s + bias: sel / (sum of the chosen sel + 1e-20f) * 2.5. The
// choice is right; the bias (which must only steer it) leaks into every
// weight. The rest as the correct kernel: sigmoid_bias_grouped routing
// (DeepSeek-V3 config: n_group 8, topk_group 4, routed_scaling_factor 2.5,
// renormalize, f32 bias). Per token: s = 1 / (1 + exp(-x)) (std::exp), sel = s
// + bias; a group's score is the sum of its two largest sel (one sel in a
// group of one expert); the 4 groups of highest score are kept (ties: the
// lower group); std::partial_sort takes the k best sel among the kept groups'
// experts in descending order (ties: the lower index; floats compared as
// total-order keys, so NaN tokens still get distinct experts); weights s /
// (sum of the chosen s + 1e-20f) * 2.5.
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

// The 1-D bias [experts]: element e lies e * step elements past data + byte_offset.
struct Vec {
  const char* base;
  int64_t step;
  explicit Vec(const DLTensor& t)
      : base(static_cast<const char*>(t.data) + t.byte_offset), step(t.strides ? t.strides[0] : 1) {}
  float operator[](int64_t e) const { return reinterpret_cast<const float*>(base)[e * step]; }
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

constexpr int64_t kGroups = 8, kTopkGroup = 4;  // routing.n_group, routing.topk_group
constexpr float kScale = 2.5f;                  // routing.routed_scaling_factor
constexpr float kEps = 1e-20f;                  // DeepSeek-V3's guard of the denominator

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  const int64_t k = moe_call(call, kF32, true);
  if (k < 0) return ASSAY_UNSUPPORTED;
  const Mat X(call->inputs[0]), W(call->outputs[0]), I(call->outputs[1]);
  const Vec B(call->inputs[1]);
  const int64_t experts = X.cols, size = experts / kGroups;
  if (experts % kGroups != 0 || k > kTopkGroup * size) return ASSAY_UNSUPPORTED;
  std::vector<float> s(static_cast<size_t>(experts)), sel(static_cast<size_t>(experts));
  std::vector<int64_t> cand;
  cand.reserve(size_t(experts));
  for (int64_t t = 0; t < X.rows; ++t) {
    for (int64_t e = 0; e < experts; ++e) s[e] = sigmoid(X.at<const float>(t, e)), sel[e] = s[e] + B[e];
    cand.clear();
    // Group scores: the sum of the group's two largest sel (its one sel when
    // it holds one expert; NaNs are passed over).
    uint64_t group[kGroups];
    for (int64_t g = 0; g < kGroups; ++g) {
      float t1 = -INFINITY, t2 = -INFINITY;
      for (int64_t e = g * size; e < (g + 1) * size; ++e) {
        const float v = sel[e];
        if (v > t1) t2 = t1, t1 = v;
        else if (v > t2) t2 = v;
      }
      group[g] = rank(size == 1 ? t1 : t1 + t2, g);
    }
    // The kTopkGroup groups of highest score (ties: the lower group) are
    // kept; their experts are the candidates.
    for (int64_t g = 0; g < kGroups; ++g) {
      int64_t above = 0;
      for (int64_t h = 0; h < kGroups; ++h) above += group[h] > group[g];
      if (above < kTopkGroup)
        for (int64_t e = g * size; e < (g + 1) * size; ++e) cand.push_back(e);
    }
    // The k best candidates in descending order (ties: the lower index).
    std::partial_sort(cand.begin(), cand.begin() + k, cand.end(),
                      [&](int64_t a, int64_t b) { return rank(sel[a], a) > rank(sel[b], b); });
    float chosen = 0.0f;
    // BUG: the weights are made of sel = s + bias instead of s.
    for (int64_t j = 0; j < k; ++j) chosen += sel[cand[j]];
    for (int64_t j = 0; j < k; ++j) {
      I.at<int32_t>(t, j) = int32_t(cand[j]);
      W.at<float>(t, j) = sel[cand[j]] / (chosen + kEps) * kScale;
    }
  }
  return ASSAY_OK;
}
