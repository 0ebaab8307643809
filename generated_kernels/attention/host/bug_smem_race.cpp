// PLANTED BUG (missing barrier: a stale shared tile): flash_f16 (f16 q, k, v
// and o, f32 lse; FlashAttention-2-style tiles of 64 keys) as a GPU would
// compute it when the K/V tile in shared memory is reused across tiles with
// a missing __syncthreads(): on a partial tile (fewer than 64 keys left) the
// "warp" that loads slots 32..63 has not written them before the others read
// the tile, so those slots still hold what the previous tile (the previous
// tile of this row block, or the last tile of the previous block or head)
// left there. Host image: a partial tile refreshes only slots 0..31 (real
// keys, zero fill past sk); slots 32..63 keep the previous tile's keys and
// values. Whole tiles are right, and so are partial tiles of at most 32
// keys (the stale slots are all masked); when 32 < sk % 64, the visible
// slots 32 .. sk % 64 - 1 use another tile's keys and values.
// Expected verdict: mismatch.
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

// Rounds significand `sig` shifted right by `shift` (1..31) to nearest even.
uint32_t shift_rne(uint32_t sig, int shift) {
  const uint32_t kept = sig >> shift, rest = sig & ((1u << shift) - 1u), half = 1u << (shift - 1);
  return kept + (rest > half || (rest == half && (kept & 1u)) ? 1u : 0u);
}

// f32 -> f16 bits, round to nearest even (IEEE conversion).
uint16_t f16_from_float(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t mag = u & 0x7fffffffu, exp = mag >> 23;
  if (mag > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));  // NaN, quiet
  if (mag >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // >= 65520 (Inf included): +-Inf
  if (mag >= 0x38800000u)                                   // >= 2^-14: normal in f16
    // Rebias the exponent (127 -> 15) and round the 23-bit fraction to 10;
    // a carry out of the fraction bumps the exponent, which is what we want.
    return uint16_t(sign | shift_rne(((exp - 112u) << 23) | (mag & 0x7fffffu), 13));
  if (mag <= 0x33000000u) return sign;  // <= 2^-25 (f32 subnormals included): to +-0
  // f16 subnormal: value = sig * 2^(exp - 150), in units of 2^-24: sig >> (126 - exp).
  // exp is 102..112 here, so the shift is 14..24; rounding up to 0x400 gives
  // the smallest normal's bits.
  return uint16_t(sign | shift_rne((mag & 0x7fffffu) | 0x800000u, int(126u - exp)));
}

// f16 bits -> float, exact.
float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, frac = h & 0x3ffu;
  uint32_t bits;
  if (exp == 31) bits = sign | 0x7f800000u | frac << 13;
  else if (exp != 0) bits = sign | (exp + 112u) << 23 | frac << 13;
  else {  // 0 or subnormal: frac * 2^-24, exact in f32
    const float f = float(frac) * 0x1p-24f;
    std::memcpy(&bits, &f, 4);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The storage type of q, k, v and o: IEEE half.
using Elem = uint16_t;
constexpr DLDataType kElem{kDLFloat, 16, 1};
float load(Elem x) { return f16_to_float(x); }
Elem store(float x) { return f16_from_float(x); }

constexpr int64_t kTile = 64;  // keys per K/V tile
constexpr int64_t kRows = 64;  // query rows per block

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  Dims n;
  if (!attention_call(call, kElem, true, &n)) return ASSAY_UNSUPPORTED;
  const Ten Q(call->inputs[0]), K(call->inputs[1]), V(call->inputs[2]), O(call->outputs[0]), L(call->outputs[1]);
  const int64_t group = n.hq / n.hk, d = n.d, dv = n.dv;
  const int64_t rows = std::min(kRows, n.sq);
  const int64_t kv_len = n.sk;  // keys [0, kv_len) exist; the tile slots past it are masked
  // Bottom-right causal: row i sees keys [0, row_end(i)).
  auto row_end = [&](int64_t i) { return n.causal ? std::min(kv_len, i + n.sk - n.sq + 1) : kv_len; };
  auto sz = [](int64_t count) { return static_cast<size_t>(count); };
  std::vector<float> q(sz(rows * d)), kt(sz(d * kTile)), vt(sz(kTile * dv)), acc(sz(rows * dv));
  std::vector<float> m(sz(rows)), l(sz(rows)), s(sz(kTile));
  for (int64_t z = 0; z < n.b; ++z)
    for (int64_t h = 0; h < n.hq; ++h) {
      const int64_t hk = h / group;  // consecutive query heads share a key/value head
      for (int64_t i0 = 0; i0 < n.sq; i0 += kRows) {
        const int64_t nr = std::min(kRows, n.sq - i0);
        for (int64_t r = 0; r < nr; ++r) {
          for (int64_t t = 0; t < d; ++t) q[r * d + t] = load(Q.at<const Elem>(z, h, i0 + r, t));
          for (int64_t c = 0; c < dv; ++c) acc[r * dv + c] = 0.0f;
          m[r] = -INFINITY, l[r] = 0.0f;
        }
        // The walk stops at the causal diagonal of the block's last row.
        const int64_t walk_end = row_end(i0 + nr - 1);
        for (int64_t j0 = 0; j0 < walk_end; j0 += kTile) {
          // The tile: keys j0 .. j0 + nk - 1 converted to float, zeros past sk.
          const int64_t nk = std::min(kTile, n.sk - j0);
          // BUG: a partial tile refreshes only its first half; slots 32..63 stay stale.
          for (int64_t j = 0; j < (nk < kTile ? kTile / 2 : kTile); ++j) {
            if (j < nk) {
              for (int64_t t = 0; t < d; ++t) kt[t * kTile + j] = load(K.at<const Elem>(z, hk, j0 + j, t));
              for (int64_t c = 0; c < dv; ++c) vt[j * dv + c] = load(V.at<const Elem>(z, hk, j0 + j, c));
            } else {
              for (int64_t t = 0; t < d; ++t) kt[t * kTile + j] = 0.0f;
              for (int64_t c = 0; c < dv; ++c) vt[j * dv + c] = 0.0f;
            }
          }
          for (int64_t r = 0; r < nr; ++r) {
            // Slots [0, vis) of this tile are visible to row i0 + r.
            const int64_t vis = std::clamp<int64_t>(row_end(i0 + r) - j0, 0, kTile);
            if (vis == 0) continue;
            for (int64_t j = 0; j < kTile; ++j) s[j] = 0.0f;
            for (int64_t t = 0; t < d; ++t) {
              const float qt = q[r * d + t];
              const float* kr = &kt[t * kTile];
              for (int64_t j = 0; j < kTile; ++j) s[j] += qt * kr[j];
            }
            float mt = -INFINITY;
            for (int64_t j = 0; j < kTile; ++j) {
              s[j] = j < vis ? n.scale * s[j] : -INFINITY;  // the mask: by selection
              mt = std::fmax(mt, s[j]);
            }
            const float m_new = std::fmax(m[r], mt);
            const float base = m_new == -INFINITY ? 0.0f : m_new;  // Check_inf
            const float alpha = std::exp(m[r] - base);             // rescales the old state
            float lt = 0.0f;
            for (int64_t j = 0; j < vis; ++j) lt += (s[j] = std::exp(s[j] - base));  // P, in place
            l[r] = l[r] * alpha + lt;
            m[r] = m_new;
            float* a = &acc[r * dv];
            for (int64_t c = 0; c < dv; ++c) a[c] *= alpha;
            for (int64_t j = 0; j < vis; ++j) {
              const float p = s[j];
              const float* vr = &vt[j * dv];
              for (int64_t c = 0; c < dv; ++c) a[c] += p * vr[c];
            }
          }
        }
        for (int64_t r = 0; r < nr; ++r) {
          const int64_t i = i0 + r;
          const float* a = &acc[r * dv];
          if (l[r] == 0.0f) {  // no visible key, or only -inf logits: the empty row
            for (int64_t c = 0; c < dv; ++c) O.at<Elem>(z, h, i, c) = store(0.0f);
            L.at<float>(z, h, i) = -INFINITY;
          } else {
            const float inv = 1.0f / l[r];
            for (int64_t c = 0; c < dv; ++c) O.at<Elem>(z, h, i, c) = store(a[c] * inv);
            L.at<float>(z, h, i) = m[r] + std::log(l[r]);
          }
        }
      }
    }
  return ASSAY_OK;
}
