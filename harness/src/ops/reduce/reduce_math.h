// The FP64 reference of one row of a reduction and its error bound, as
// pieces both references run (reduce_reference.cpp in plain loops,
// reduce_reference_cuda.cu with a block reduction):
//   add:    one element (its value and its index in the row);
//   merge:  two partial states of the same row (any split, any order);
//   finish: the row's reference value and bound.
// docs/tolerance.md ("reduce") derives the bound; docs/ops/reduce.md gives
// the NaN, tie and empty-row rules. Compiled by nvcc as C++17 too: plain
// structs, no library beyond <cmath>.
#pragma once
#include <cmath>
#include <cstdint>

#include "core/hd.h"

namespace assay::reduce {

enum class Reduction : uint8_t { sum, mean, max, min, argmax, argmin };

ASSAY_HD bool is_arg(Reduction r) { return r == Reduction::argmax || r == Reduction::argmin; }
ASSAY_HD bool is_extreme(Reduction r) { return r != Reduction::sum && r != Reduction::mean; }

// What the tolerance knows of the kernel (reduce_tolerance.cpp fills it).
struct ErrorModel {
  Reduction op = Reduction::sum;
  bool propagate = false;  // `nan: propagate`: any NaN makes max/min NaN (arg: the first NaN's index)
  bool ties_any = false;   // `ties: any`: an arg-reduction may return any index of the extreme
  double u = 0;            // unit roundoff of the compute type, 2^-p
  double u_conv = 0;       // converting x into the compute type (0 when it holds x exactly)
  double tiny = 0;         // the compute type's subnormal spacing (underflow of partial sums)
  double exact_limit = 0;  // integer partial sums up to this are exact in the compute type (2^p)
  double max_compute = 0;  // the compute type's largest finite value
  double flush = 0;        // `subnormals: flush`: the compute type's smallest normal (0: ieee)
};

// One row's state: a compensated (Neumaier) sum of the finite elements and
// what the bound and the special-value rules need.
struct RowAcc {
  double s = 0, c = 0;          // sum = s + c
  double abs = 0;               // sum of |x| over finite elements
  int64_t count = 0;            // elements seen
  bool all_int = true;          // every finite element an integer
  bool pos_inf = false, neg_inf = false;
  int64_t first_nan = -1;       // lowest index of a NaN (-1: none)
  double hi = 0, lo = 0;        // max and min of the non-NaN elements ...
  int64_t hi_at = -1, lo_at = -1;  // ... at their lowest index (-1: none)
};

ASSAY_HD void add_sum(RowAcc& r, double v) {
  const double t = r.s + v;
  r.c += fabs(r.s) >= fabs(v) ? (r.s - t) + v : (v - t) + r.s;
  r.s = t;
}

// The better of (v, i) and the held extreme (hi or lo); ties go to the lower index.
ASSAY_HD void take_extreme(double& held, int64_t& at, double v, int64_t i, bool want_max) {
  if (at < 0 || (want_max ? v > held : v < held) || (v == held && i < at)) held = v, at = i;
}

ASSAY_HD void add(RowAcc& r, double v, int64_t i) {
  ++r.count;
  if (v != v) {
    if (r.first_nan < 0 || i < r.first_nan) r.first_nan = i;
    return;
  }
  take_extreme(r.hi, r.hi_at, v, i, true);
  take_extreme(r.lo, r.lo_at, v, i, false);
  if (v == INFINITY) {
    r.pos_inf = true;
  } else if (v == -INFINITY) {
    r.neg_inf = true;
  } else {
    add_sum(r, v);
    r.abs += fabs(v);
    if (v != floor(v)) r.all_int = false;
  }
}

ASSAY_HD void merge(RowAcc& a, const RowAcc& b) {
  add_sum(a, b.s);
  a.c += b.c;
  a.abs += b.abs;
  a.count += b.count;
  a.all_int = a.all_int && b.all_int;
  a.pos_inf = a.pos_inf || b.pos_inf;
  a.neg_inf = a.neg_inf || b.neg_inf;
  if (b.first_nan >= 0 && (a.first_nan < 0 || b.first_nan < a.first_nan)) a.first_nan = b.first_nan;
  if (b.hi_at >= 0) take_extreme(a.hi, a.hi_at, b.hi, b.hi_at, true);
  if (b.lo_at >= 0) take_extreme(a.lo, a.lo_at, b.lo, b.lo_at, false);
}

// The extreme a max/min (or arg) reduction finds: its value (NaN where the
// rules give NaN) and the lowest index holding it.
ASSAY_HD void extreme(const ErrorModel& e, const RowAcc& r, double* value, int64_t* at) {
  const bool want_max = e.op == Reduction::max || e.op == Reduction::argmax;
  if (r.first_nan >= 0 && (e.propagate || (want_max ? r.hi_at : r.lo_at) < 0)) {
    *value = NAN;  // propagate: the first NaN; ieee: only an all-NaN row
    *at = e.propagate ? r.first_nan : 0;
    return;
  }
  *value = want_max ? r.hi : r.lo;
  *at = want_max ? r.hi_at : r.lo_at;
  if (*at < 0) *value = NAN, *at = 0;  // no elements (n = 0: never swept, an InputError in case files)
}

// Whether an arg-reduction's answer `got` (an index) with x[got] = xg is one
// `ties: any` accepts: an index holding the extreme (NaN counts as equal to NaN).
ASSAY_HD bool tie_accepts(const ErrorModel& e, const RowAcc& r, int64_t n, double got, double xg) {
  if (!(got >= 0 && got < double(n)) || got != floor(got)) return false;
  double v;
  int64_t at;
  extreme(e, r, &v, &at);
  return v != v ? xg != xg : xg == v;
}

// The row's reference and bound (the error allowed before the safety factor
// T and the output's rounding, which compare() adds). bound 0: exact.
ASSAY_HD void finish(const ErrorModel& e, const RowAcc& r, int64_t n, double* ref, double* bound) {
  *bound = 0;
  if (is_extreme(e.op)) {
    double v;
    int64_t at;
    extreme(e, r, &v, &at);
    *ref = is_arg(e.op) ? double(at) : v;
    // A kernel that flushes subnormal inputs may return 0 for a subnormal extreme.
    if (!is_arg(e.op) && e.flush > 0 && fabs(v) < e.flush) *bound = e.flush;
    return;
  }
  if (r.first_nan >= 0 || (r.pos_inf && r.neg_inf)) {
    *ref = NAN;
  } else if (r.pos_inf || r.neg_inf) {
    *ref = r.pos_inf ? INFINITY : -INFINITY;
  } else {
    const double s = r.s + r.c;
    const double terms = r.count > 1 ? double(r.count - 1) : 0.0;
    double b;
    if (r.all_int && r.abs <= e.exact_limit && e.flush == 0) {
      b = 0;  // integers whose every partial sum the compute type holds: exact in any order
    } else if (terms * e.u < 0.5 && r.abs <= e.max_compute) {
      // Any order (sequential, tree, atomics): |err| <= gamma_{n-1} sum|x|,
      // gamma_k = k u / (1 - k u); converting x into a narrower compute type
      // u sum|x|; partial sums underflowing, half a subnormal spacing each;
      // flushed subnormals, a smallest normal per element and partial sum.
      b = (terms * e.u / (1.0 - terms * e.u) + e.u_conv) * r.abs + terms * e.tiny + 2.0 * double(r.count) * e.flush;
    } else {
      b = INFINITY;  // past what the compute type can sum at all: any result
    }
    if (e.op == Reduction::sum) {
      *ref = s;
      *bound = b;
    } else {
      // mean: the sum's error over n, and the division (or a rounded 1/n and
      // a multiply: two roundings).
      *ref = n > 0 ? s / double(n) : NAN;
      *bound = n > 0 && b > 0 ? b / double(n) + 2.0 * e.u * fabs(*ref) : 0.0;
      if (n > 0 && b == 0) *bound = 2.0 * e.u * fabs(*ref);
    }
    return;
  }
}

// Row `row` of x (n elements, at(c) reading element c): its reference and
// bound; for `ties: any` arg-reductions, `got` (the kernel's index, or NaN
// when not known) becomes the reference where it holds the extreme.
template <class At>
ASSAY_HD void reference_row(const ErrorModel& e, int64_t n, const At& at, const double* got, double* ref, double* bound) {
  RowAcc acc;
  for (int64_t c = 0; c < n; ++c) add(acc, at(c), c);
  finish(e, acc, n, ref, bound);
  if (got && e.ties_any && is_arg(e.op)) {
    const double g = *got;
    if (g >= 0 && g < double(n) && g == floor(g) && tie_accepts(e, acc, n, g, at(int64_t(g)))) *ref = g;
  }
}

}  // namespace assay::reduce
