// The FP64 layernorm / rmsnorm of one row and its error bound, as pieces both
// references run (norm_reference_host.cpp in plain loops,
// norm_reference_cuda.cu with block reductions between the passes):
//   pass 1: sum x, sum |x|, sum x^2 (rmsnorm), NaN and +-Inf noted;
//   pass 2 (layernorm): sum (x - mean)^2 about the FP64 mean;
//   finish: the row's statistics and their bounds (mean, rstd interval);
//   element: ref_i and bound_i of y.
// docs/tolerance.md ("layernorm and rmsnorm") derives the bound. The safety
// factor T is applied here (the rstd interval is not linear in it), so the
// comparison runs with scale 1. Compiled by nvcc as C++17 too.
#pragma once
#include <cmath>
#include <cstdint>

#include "core/hd.h"

namespace assay::norm {

// What the tolerance knows of the kernel's arithmetic (norm_tolerance.cpp).
struct ErrorModel {
  double u = 0;           // unit roundoff of the compute type
  double u_conv = 0;      // converting x, weight, bias into the compute type (0 when exact)
  double rsqrt_ulps = 1;  // 1/sqrt(v + eps): ulps of the compute type (`math`)
  double tiny = 0;        // the compute type's subnormal spacing (underflowing squares)
  double T = 2;           // the safety factor
  double eps = 0;
  bool rms = false;       // rmsnorm: no mean, the mean of squares
};

struct RowPass1 {
  double sum = 0, abs = 0, sq = 0;  // over the finite elements
  int64_t count = 0;                // elements seen
  bool nan = false, pos_inf = false, neg_inf = false;
};
struct RowPass2 {
  double dev = 0;  // sum (x - mean)^2
};

ASSAY_HD void add(RowPass1& r, double v) {
  ++r.count;
  if (v != v) {
    r.nan = true;
    return;
  }
  if (v == INFINITY) {
    r.pos_inf = true;
    return;
  }
  if (v == -INFINITY) {
    r.neg_inf = true;
    return;
  }
  r.sum += v, r.abs += fabs(v), r.sq += v * v;
}
ASSAY_HD void merge(RowPass1& a, const RowPass1& b) {
  a.sum += b.sum, a.abs += b.abs, a.sq += b.sq, a.count += b.count;
  a.nan = a.nan || b.nan, a.pos_inf = a.pos_inf || b.pos_inf, a.neg_inf = a.neg_inf || b.neg_inf;
}
ASSAY_HD bool finite_row(const RowPass1& r) { return !r.nan && !r.pos_inf && !r.neg_inf; }
ASSAY_HD double row_mean(const RowPass1& r) { return r.count > 0 ? r.sum / double(r.count) : 0.0; }

ASSAY_HD void add(RowPass2& r, double v, double mean) {
  const double d = v - mean;
  r.dev += d * d;
}
ASSAY_HD void merge(RowPass2& a, const RowPass2& b) { a.dev += b.dev; }

struct RowStats {
  enum Kind : int { normal, nan_row, inf_row } kind = normal;
  double mean = 0, rstd = 0;        // references (rmsnorm: mean unused)
  double mean_bound = 0, rstd_bound = 0;  // allowed errors (T included)
  double e_mean = 0;                // the mean's error before T
  double r_hi = 0, dr = 0;          // the largest rstd a correct kernel may compute; max |r^ - r|
};

// v: the variance (layernorm) or mean of squares (rmsnorm); E its error
// before T. The rstd interval from v +- T E, eps never below 0 under the
// root (a variance or a mean of squares is never negative), then the
// rounding of the add, the square root and the reciprocal (or rsqrt).
ASSAY_HD void rstd_interval(const ErrorModel& e, double v, double E, RowStats& st) {
  const double den = v + e.eps;
  st.rstd = 1.0 / sqrt(den);
  double lo = den - e.T * E;
  if (lo < e.eps) lo = e.eps;
  const double hi = den + e.T * E;
  const double rel = e.T * (2.0 * e.rsqrt_ulps + 1.0) * e.u;
  const double r_lo = (1.0 / sqrt(hi)) * (1.0 - rel);
  const double r_hi = lo > 0 ? (1.0 / sqrt(lo)) * (1.0 + rel) : INFINITY;
  st.r_hi = r_hi;
  st.dr = fmax(r_hi - st.rstd, st.rstd - r_lo);
  st.rstd_bound = st.dr;
}

ASSAY_HD RowStats finish(const ErrorModel& e, const RowPass1& p1, const RowPass2& p2) {
  RowStats st;
  const double n = double(p1.count);
  // n = 0: the statistics are 0/0 (NaN), as a kernel's sum / n gives.
  if (p1.count == 0 || p1.nan || (!e.rms && p1.pos_inf && p1.neg_inf)) {  // rmsnorm: both square to +Inf
    st.kind = RowStats::nan_row;
    st.mean = st.rstd = NAN;
    return st;
  }
  if (p1.pos_inf || p1.neg_inf) {
    // layernorm: the mean is that infinity (a running-mean kernel may make
    // NaN of it: the mean tensor accepts that), the variance inf - inf = NaN.
    // rmsnorm: the mean of squares is +Inf, rstd 0, y 0 (x * 0) or NaN (Inf * 0).
    st.kind = RowStats::inf_row;
    st.mean = p1.pos_inf ? INFINITY : -INFINITY;
    st.rstd = e.rms ? 0.0 : NAN;
    return st;
  }
  const double A = p1.abs / n;  // mean |x|
  if (e.rms) {
    const double ms = p1.sq / n;
    // The squares (one rounding each, and the conversions of x), the sum in
    // any order (gamma_{n-1}), the division; squares that underflow lose up
    // to half a subnormal spacing each.
    const double E = (n + 2.0) * e.u * ms + 2.0 * e.u_conv * ms + e.tiny;
    rstd_interval(e, ms, E, st);
    return st;
  }
  st.mean = p1.sum / n;
  // The sum in any order (gamma_{n-1} sum |x|), the division, the conversions.
  st.e_mean = (n + 1.0) * e.u * A + e.u_conv * A;
  st.mean_bound = e.T * st.e_mean;
  const double v = p2.dev / n, sd = sqrt(v);
  // The deviations' squares and their sum (all positive: gamma_{n+1} v, and
  // the subtraction's rounding), a running-mean (Welford) kernel's mean
  // errors met by every deviation (2 e_mean sd), the two-pass kernel's shift
  // of the mean (e_mean^2), x converted (2 u_conv A sd), underflow.
  const double E = (n + 4.0) * e.u * v + 2.0 * st.e_mean * sd + st.e_mean * st.e_mean + 2.0 * e.u_conv * A * sd +
                   e.tiny;
  rstd_interval(e, v, E, st);
  return st;
}

// Element x of a row with weight w and bias b (0 for rmsnorm): y's reference
// and allowed error (T included; compare() adds the output ulp and floor).
ASSAY_HD void element(const ErrorModel& e, const RowStats& st, double x, double w, double b, double* ref,
                      double* bound) {
  *bound = 0;
  if (st.kind == RowStats::nan_row || (st.kind == RowStats::inf_row && !e.rms)) {
    *ref = NAN;
    return;
  }
  if (st.kind == RowStats::inf_row) {  // rmsnorm: x * 0 * w
    *ref = (x == x && x != INFINITY && x != -INFINITY && w == w && w != INFINITY && w != -INFINITY) ? 0.0 : NAN;
    return;
  }
  if (e.rms) {
    const double xw = fabs(x * w);
    *ref = x * st.rstd * w;
    // rstd's interval, then x * r * w: two roundings and the conversions.
    *bound = xw > 0 ? xw * st.dr + e.T * xw * st.r_hi * (2.0 * e.u + 2.0 * e.u_conv) : 0.0;
    return;
  }
  const double d = x - st.mean, aw = fabs(w);
  const double y = d * st.rstd * w + b;
  *ref = y;
  // rstd's interval met by |d|; the mean's error, the subtraction and the
  // conversion of x met by the largest rstd; the products (d r, then w) and
  // the bias add; w and b converted.
  double t = (d != 0 && aw > 0) ? fabs(d) * aw * st.dr : 0.0;
  const double shift = st.e_mean + e.u * fabs(d) + e.u_conv * fabs(x);
  if (aw > 0 && shift > 0) t += e.T * aw * st.r_hi * shift;
  t += e.T * (2.0 * e.u * fabs(d * st.rstd * w) + e.u * (fabs(y) + fabs(b)) +
              e.u_conv * (fabs(d * st.rstd * w) + fabs(b)));
  *bound = t;
}

}  // namespace assay::norm
