// The FP64 attention of one query row and its error bound, as pieces both
// references run (attention_reference.cpp in loops, attention_reference_cuda.cu
// with a block of threads per row):
//   pass 1: each visible key's logit s_j and its error e_j; the row's max
//           (softmax_math.h's RowMax);
//   pass 2: S = Σ exp(s_j − m) and W = Σ exp(s_j − m)·(e_j + exp's error);
//           softmax's finish gives the row's class and δ_S;
//   pass 3: per output column, o = Σ p_j v_j and the sums its bound needs;
//   finish: o, lse, their bounds and the NaN/Inf class each may also have.
// docs/tolerance.md ("attention") derives the bound.
// Compiled by nvcc as C++17 too: plain structs, no library beyond <cmath>.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/hd.h"
#include "core/tensor_geom.h"
#include "ops/softmax/softmax_math.h"

namespace assay::attention {

inline constexpr int64_t kMaxHeadDim = 256;  // d and dv at most

// What the tolerance knows of the kernel's arithmetic (attention_tolerance.cpp
// fills it from the spec).
struct Model {
  softmax::ErrorModel sm;  // the softmax's own: exp's ulps, its unit roundoff (f32 or f64)
  double u_acc = 0;        // unit roundoff of the Q·Kᵀ and P·V accumulators
  double u_in = 0;         // each of q, k, v and P rounded into the tensor cores' type (tf32), else 0
  double u_p = 0;          // P rounded to p_dtype (f32: 0, exp's result is already in it)
  double tiny_p = 0;       // the same rounding's absolute part below p_dtype's normal range
  bool empty_nan = false;  // `empty_rows: nan`
};

ASSAY_HD double gamma_of(int64_t n, double u) {
  const double nu = double(n) * u;
  return nu < 0.5 ? nu / (1.0 - nu) : 2.0 * nu;  // nu >= 0.5 never happens at d, sk <= 2^20 in f32
}

// Element t of a tensor's row at `base` (elements from its data start).
ASSAY_HD double load(const std::byte* data, DType t, int64_t at) {
  return decode(t, load_bits(t, data + at * dtype_bytes(t)));
}

// One case's inputs as the references read them.
struct Problem {
  TensorGeom q, k, v;  // data start + geometry: element (z, h, i, t) below
  int64_t b = 1, hq = 1, hk = 1, sq = 1, sk = 1, d = 1, dv = 1;
  double scale = 1;
  bool causal = false;
};
// Elements from the data start of (z, h, i, t) of a [b, h, s, e] tensor.
ASSAY_HD int64_t at(const TensorGeom& g, int64_t z, int64_t h, int64_t i, int64_t t) {
  return g.offset + z * g.strides[0] + h * g.strides[1] + i * g.strides[2] + t * g.strides[3];
}
// How many keys query row i sees (bottom-right causal alignment).
ASSAY_HD int64_t visible(const Problem& p, int64_t i) {
  if (!p.causal) return p.sk;
  const int64_t n = i + p.sk - p.sq + 1;
  return n < 0 ? 0 : (n > p.sk ? p.sk : n);
}

struct Logit {
  double s = 0;  // scale · q·k_j
  double e = 0;  // its error bound: the dot product's, the scaling's
};

// q: the row's d values as doubles; k_row: key j's first element.
ASSAY_HD Logit logit(const Model& m, const double* q, const std::byte* k, DType kt, int64_t k_row, int64_t k_step,
                     int64_t d, double scale) {
  double dot = 0, mag = 0;
  for (int64_t t = 0; t < d; ++t) {
    const double kv = load(k, kt, k_row + t * k_step);
    dot += q[t] * kv;
    mag += fabs(q[t]) * fabs(kv);
  }
  Logit l;
  l.s = scale * dot;
  // A dot product of d terms in the accumulator (γ_d Σ|q||k|), q and k
  // rounded for the tensor cores, and 3 roundings relative to s: the scale's
  // multiply, and a kernel working in base 2 (s · log2 e, then exp2).
  l.e = fabs(scale) * mag * (gamma_of(d, m.u_acc) + 2.0 * m.u_in) + 3.0 * m.sm.u * fabs(l.s);
  return l;
}

// Pass 2 over a row whose max mx is finite.
ASSAY_HD void add(softmax::RowSum& r, const Model& m, const Logit& l, double mx) {
  if (!(l.s > -INFINITY)) return;  // exp(-inf) = 0 exactly
  const double t = exp(l.s - mx);
  r.s += t;
  r.w += t * (l.e + softmax::exp_error(m.sm, l.s, mx));
}

// One key's share of pass 3: its probability, its relative error, and the
// absolute error of P near zero.
struct Term {
  double p = 0, rel = 0, tiny = 0;
};
ASSAY_HD Term term(const Model& m, const softmax::RowStats& st, const Logit& l) {
  Term t;
  if (!(l.s > -INFINITY)) return t;
  const double dd = l.s - st.m;
  t.p = exp(dd) / st.s;
  t.rel = l.e + softmax::exp_error(m.sm, l.s, st.m) + m.u_p + 2.0 * m.u_in;
  t.tiny = (m.tiny_p + (m.sm.exp_ulps + m.sm.exp_ulps_per * fabs(dd)) * m.sm.tiny) / st.s;
  return t;
}

// Pass 3's sums for one output column.
struct Column {
  double o = 0;    // Σ p_j v_j
  double a = 0;    // Σ p_j |v_j| rel_j
  double b = 0;    // Σ p_j |v_j|
  double t = 0;    // Σ |v_j| tiny_j
};
ASSAY_HD void add(Column& c, const Term& t, double v) {
  c.o += t.p * v;
  const double av = fabs(v);
  c.a += t.p * av * t.rel;
  c.b += t.p * av;
  c.t += av * t.tiny;
}

// What a row is: answers as its kind says (docs/ops/attention.md).
enum class RowKind : int { normal, masked, all_neg_inf, nan_row };
ASSAY_HD RowKind kind_of(int64_t visible, const softmax::RowStats& st) {
  if (visible == 0) return RowKind::masked;
  if (st.kind == softmax::RowStats::nan_row) return RowKind::nan_row;
  if (st.kind == softmax::RowStats::empty) return RowKind::all_neg_inf;
  return RowKind::normal;
}

// alt: a class the element may also have (finite: none).
ASSAY_HD void finish_o(const Model& m, RowKind kind, const softmax::RowStats& st, int64_t visible, const Column& c,
                       double* ref, double* bound, double* alt) {
  *bound = 0, *alt = 0;
  if (kind == RowKind::nan_row || ((kind == RowKind::masked || kind == RowKind::all_neg_inf) && m.empty_nan)) {
    *ref = NAN;
    return;
  }
  if (kind != RowKind::normal) {  // no key, or every logit -inf: 0 (NaN too when the data made it)
    *ref = 0;
    if (kind == RowKind::all_neg_inf) *alt = NAN;
    return;
  }
  *ref = c.o;
  // The keys' own errors, the normalizer's (δ_S), the P·V sum of `visible`
  // terms, the division and the scaling back of the online form; P near zero.
  *bound = c.a + c.b * (st.delta_s + gamma_of(visible, m.u_acc) + 3.0 * m.sm.u) + c.t;
}

ASSAY_HD void finish_lse(const Model& m, RowKind kind, const softmax::RowMax& mx, const softmax::RowStats& st,
                         double* ref, double* bound, double* alt) {
  *bound = 0, *alt = 0;
  switch (kind) {
    case RowKind::nan_row:
      *ref = NAN;
      if (!mx.nan) *alt = INFINITY;  // the max is +inf: lse = +inf is as good an answer
      return;
    case RowKind::masked:
    case RowKind::all_neg_inf:
      *ref = m.empty_nan ? NAN : -INFINITY;
      *alt = m.empty_nan ? -INFINITY : NAN;
      if (kind == RowKind::masked && !m.empty_nan) *alt = 0;  // a row without keys: -inf, nothing else
      return;
    case RowKind::normal: break;
  }
  const double log_s = log(st.s);
  *ref = st.m + log_s;
  // S's relative error (the logits' and exp's included), log's own, the
  // final addition and a kernel's conversions between base 2 and base e.
  *bound = st.delta_s + 2.0 * m.sm.u * m.sm.log_ulps * fabs(log_s) + m.sm.log_abs +
           3.0 * m.sm.u * (fabs(st.m) + fabs(log_s));
}

}  // namespace assay::attention
