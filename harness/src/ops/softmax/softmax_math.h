// The FP64 softmax / log_softmax of one row and its error bound, as pieces
// both references run (softmax_reference_host.cpp in plain loops,
// softmax_reference_cuda.cu with block reductions between the passes):
//   pass 1: the row's max (NaN and +Inf noted), its finite range and count;
//   pass 2: S = sum exp(x_j - m) and W = sum exp(x_j - m) * err_j;
//   finish: the row's class and the sum's relative error delta_S;
//   element: ref_i and bound_i.
// docs/tolerance.md ("softmax and log_softmax") derives the bound.
// Compiled by nvcc as C++17 too: plain structs, no library beyond <cmath>.
#pragma once
#include <cmath>
#include <cstdint>

#include "core/hd.h"

namespace assay::softmax {

// What the tolerance knows of the kernel's arithmetic (softmax_tolerance.cpp
// fills it from the spec): unit roundoffs and the exp/log error in ulps.
struct ErrorModel {
  double u = 0;          // unit roundoff of the compute type, 2^-p
  double u_conv = 0;     // converting x into the compute type (0 when it holds x exactly)
  double exp_ulps = 1;   // exp errs by at most exp_ulps + exp_ulps_per * |d| ulps at d = x - m
  double exp_ulps_per = 0;
  double log_ulps = 1;   // log S: ulps, and an absolute part (__logf near 1)
  double log_abs = 0;
  double tiny = 0;       // the compute type's subnormal spacing: an ulp of exp's result below its normal range
  bool log = false;         // log_softmax
  bool empty_zero = false;  // an all -Inf row: 0 (log: -Inf) instead of NaN
};

struct RowMax {  // pass 1
  double m = -INFINITY;         // the max, NaN aside
  bool nan = false;             // some element is NaN
  double lo = INFINITY, hi = -INFINITY;  // the finite elements' range
  int64_t finite = 0;           // how many are finite
};
struct RowSum {  // pass 2
  double s = 0, w = 0;
};
struct RowStats {
  enum Kind : int { normal, nan_row, empty } kind = normal;
  double m = 0, s = 1, log_s = 0, delta_s = 0;
};

ASSAY_HD double neg_inf() { return -INFINITY; }

ASSAY_HD void add(RowMax& r, double v) {
  if (v != v) {
    r.nan = true;
    return;
  }
  if (v > r.m) r.m = v;
  if (v > -INFINITY && v < INFINITY) {
    if (v < r.lo) r.lo = v;
    if (v > r.hi) r.hi = v;
    ++r.finite;
  }
}
ASSAY_HD void merge(RowMax& a, const RowMax& b) {
  a.nan = a.nan || b.nan;
  if (b.m > a.m) a.m = b.m;
  if (b.lo < a.lo) a.lo = b.lo;
  if (b.hi > a.hi) a.hi = b.hi;
  a.finite += b.finite;
}

// Relative error of the kernel's exp(d) (its ulps are at most 2u relative),
// plus the subtraction d = x - m (absolute u|d|, and converting x and m into
// the compute type when it is narrower than x).
ASSAY_HD double exp_error(const ErrorModel& e, double x, double m) {
  const double d = fabs(x - m);
  return 2.0 * e.u * (e.exp_ulps + e.exp_ulps_per * d) + e.u * d + e.u_conv * (fabs(x) + fabs(m));
}

// Pass 2 over the finite elements of a row whose max m is finite.
ASSAY_HD void add(RowSum& r, const ErrorModel& e, double x, double m) {
  if (!(x > -INFINITY)) return;  // exp(-Inf) = 0 exactly
  const double t = exp(x - m);
  r.s += t;
  r.w += t * exp_error(e, x, m);
}
ASSAY_HD void merge(RowSum& a, const RowSum& b) { a.s += b.s, a.w += b.w; }

ASSAY_HD RowStats finish(const ErrorModel& e, const RowMax& mx, const RowSum& sum) {
  RowStats st;
  st.m = mx.m;
  if (mx.nan || mx.m == INFINITY) {  // NaN, or +Inf - +Inf
    st.kind = RowStats::nan_row;
    return st;
  }
  if (!(mx.m > -INFINITY)) {  // every element -Inf (or none)
    st.kind = RowStats::empty;
    return st;
  }
  st.s = sum.s, st.log_s = log(sum.s);
  const double k = mx.finite > 1 ? double(mx.finite - 1) : 0.0;
  // Summing the positive terms in any order: (k) u; the terms' own errors,
  // weighted; an online kernel's rescalings by exp(m_old - m_new): at most k
  // along any term's path, each a rounded exp and multiply, their arguments
  // adding up to at most the finite range.
  const double range = mx.finite > 0 ? mx.hi - mx.lo : 0.0;
  st.delta_s = k * e.u + sum.w / sum.s + k * (2.0 * e.exp_ulps + 1.0) * e.u +
               (1.0 + 2.0 * e.exp_ulps_per) * e.u * range;
  return st;
}

// Element x of a row: its reference and bound (the error allowed before the
// safety factor T and the output rounding; compare() adds those).
ASSAY_HD void element(const ErrorModel& e, const RowStats& st, double x, double* ref, double* bound) {
  *bound = 0;
  if (st.kind == RowStats::nan_row || (st.kind == RowStats::empty && !e.empty_zero)) {
    *ref = NAN;
    return;
  }
  if (st.kind == RowStats::empty || !(x > -INFINITY)) {
    *ref = e.log ? -INFINITY : 0.0;
    return;
  }
  const double d = x - st.m;
  if (e.log) {
    const double y = d - st.log_s;
    *ref = y;
    // d rounded (and converted), log S's relative sum error as an absolute
    // one, log's own error, the final subtraction, or (x - (m + log S)).
    *bound = e.u * fabs(d) + e.u_conv * (fabs(x) + fabs(st.m)) + st.delta_s + 2.0 * e.u * e.log_ulps * fabs(st.log_s) +
             e.log_abs + e.u * fabs(y) + e.u * (fabs(st.m) + fabs(st.log_s));
    return;
  }
  const double y = exp(d) / st.s;
  *ref = y;
  // exp(d) and its argument, the sum, the division (or a reciprocal and a
  // multiply); below the normal range exp's ulps are absolute (subnormal
  // spacings), and S >= 1 only shrinks them.
  *bound = (exp_error(e, x, st.m) + st.delta_s + 2.0 * e.u) * y + (e.exp_ulps + e.exp_ulps_per * fabs(d)) * e.tiny;
}

}  // namespace assay::softmax
