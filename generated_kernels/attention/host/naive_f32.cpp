// Correct host kernel: scaled dot-product attention, forward, f32 q, k, v
// and o, f32 lse; the textbook three passes per query row. For batch z,
// query head h, row i: the key/value head is h / (hq / hk); the visible keys
// are j < sk, and with causal = 1 only j <= i + sk - sq (bottom-right).
// Pass 1 forms s_j = scale * (q_i . k_j) (the dot product accumulated in
// f32, ascending t) for every visible key and their maximum m (std::fmax: a
// NaN logit does not become the maximum, it reaches the sum in pass 2);
// pass 2 sums exp(s_j - m) in ascending j; pass 3 accumulates
// exp(s_j - m) * v_j in f32 and divides by the sum. lse = m + log(sum). A
// row without a visible key gets o = 0 and lse = -inf. A NaN or +inf logit
// makes the row NaN (NaN - m, or inf - inf, in the exponent); so does a row
// whose visible logits are all -inf or all NaN (m stays -inf, and
// exp(-inf - -inf) is NaN), an answer the op accepts for the all -inf row.
// Masked keys are skipped, never multiplied by 0. Every tensor is read
// through its strides and byte_offset. f32 arithmetic, glibc expf and logf.
// Expected verdict: pass.
#include <assay/abi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

// A 3-D or 4-D DLTensor: element (z, h, i, t) lies z*s0 + h*s1 + i*s2 + t*s3
// elements past data + byte_offset (a 3-D tensor has no t: s3 = 0).
// strides NULL would mean compact row-major.
struct Ten {
  char* base;
  int64_t st[4] = {0, 0, 0, 0};
  explicit Ten(const DLTensor& t) : base(static_cast<char*>(t.data) + t.byte_offset) {
    int64_t compact = 1;
    for (int k = t.ndim - 1; k >= 0; --k) {
      st[k] = t.strides ? t.strides[k] : compact;
      compact *= t.shape[k];
    }
  }
  template <class T> T& at(int64_t z, int64_t h, int64_t i, int64_t t = 0) const {
    return reinterpret_cast<T*>(base)[z * st[0] + h * st[1] + i * st[2] + t * st[3]];
  }
};

constexpr DLDataType kF32{kDLFloat, 32, 1};

bool is(const DLTensor& t, DLDataType d, int ndim) {
  return t.ndim == ndim && t.dtype.code == d.code && t.dtype.bits == d.bits && t.dtype.lanes == 1 &&
         t.data != nullptr;
}

// The sizes and scalars of an attention call.
struct Dims {
  int64_t b, hq, hk, sq, sk, d, dv;
  float scale;
  bool causal;
};

// True (and *out filled) when the call is attention as this kernel takes it:
// q [b,hq,sq,d], k [b,hk,sk,d], v [b,hk,sk,dv], o [b,hq,sq,dv] of type `io`,
// lse [b,hq,sq] f32 exactly when `lse`, hq a multiple of hk, the scalars
// scale and causal (0 or 1).
bool attention_call(const assay_call* call, DLDataType io, bool lse, Dims* out) {
  if (!call || !call->op || std::strcmp(call->op, "attention") != 0) return false;
  if (call->num_inputs != 3 || call->num_outputs != (lse ? 2 : 1) || call->num_scalars != 2) return false;
  if (!call->inputs || !call->outputs || !call->scalars) return false;
  const DLTensor &q = call->inputs[0], &k = call->inputs[1], &v = call->inputs[2], &o = call->outputs[0];
  if (!is(q, io, 4) || !is(k, io, 4) || !is(v, io, 4) || !is(o, io, 4)) return false;
  Dims n{q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3], 0.0f, false};
  if (n.b < 0 || n.hq < 0 || n.hk < 1 || n.sq < 0 || n.sk < 0 || n.d < 0 || n.dv < 0) return false;
  if (n.hq % n.hk != 0) return false;
  if (k.shape[0] != n.b || k.shape[3] != n.d) return false;
  if (v.shape[0] != n.b || v.shape[1] != n.hk || v.shape[2] != n.sk) return false;
  if (o.shape[0] != n.b || o.shape[1] != n.hq || o.shape[2] != n.sq || o.shape[3] != n.dv) return false;
  if (lse) {
    const DLTensor& l = call->outputs[1];
    if (!is(l, kF32, 3) || l.shape[0] != n.b || l.shape[1] != n.hq || l.shape[2] != n.sq) return false;
  }
  const double causal = call->scalars[1];
  if (causal != 0.0 && causal != 1.0) return false;
  n.scale = float(call->scalars[0]);
  n.causal = causal == 1.0;
  *out = n;
  return true;
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  Dims n;
  if (!attention_call(call, kF32, true, &n)) return ASSAY_UNSUPPORTED;
  const Ten Q(call->inputs[0]), K(call->inputs[1]), V(call->inputs[2]), O(call->outputs[0]), L(call->outputs[1]);
  const int64_t group = n.hq / n.hk;
  std::vector<float> s(static_cast<size_t>(n.sk)), acc(static_cast<size_t>(n.dv));
  for (int64_t z = 0; z < n.b; ++z)
    for (int64_t h = 0; h < n.hq; ++h) {
      const int64_t hk = h / group;  // consecutive query heads share a key/value head
      for (int64_t i = 0; i < n.sq; ++i) {
        // Keys [0, end) are visible: all of them, or bottom-right causal.
        const int64_t end = n.causal ? std::min(n.sk, std::max<int64_t>(0, i + n.sk - n.sq + 1)) : n.sk;
        // Pass 1: the logits and their maximum.
        float m = -INFINITY;
        for (int64_t j = 0; j < end; ++j) {
          float dot = 0.0f;
          for (int64_t t = 0; t < n.d; ++t) dot += Q.at<const float>(z, h, i, t) * K.at<const float>(z, hk, j, t);
          s[j] = n.scale * dot;
          m = std::fmax(m, s[j]);
        }
        if (end == 0) {  // no visible key: the empty row
          for (int64_t c = 0; c < n.dv; ++c) O.at<float>(z, h, i, c) = 0.0f;
          L.at<float>(z, h, i) = -INFINITY;
          continue;
        }
        // Pass 2: the sum of exp(s_j - m).
        float sum = 0.0f;
        for (int64_t j = 0; j < end; ++j) sum += std::exp(s[j] - m);
        // Pass 3: o = sum_j exp(s_j - m) v_j / sum.
        for (int64_t c = 0; c < n.dv; ++c) acc[c] = 0.0f;
        for (int64_t j = 0; j < end; ++j) {
          const float p = std::exp(s[j] - m);
          for (int64_t c = 0; c < n.dv; ++c) acc[c] += p * V.at<const float>(z, hk, j, c);
        }
        for (int64_t c = 0; c < n.dv; ++c) O.at<float>(z, h, i, c) = acc[c] / sum;
        L.at<float>(z, h, i) = m + std::log(sum);
      }
    }
  return ASSAY_OK;
}
