// The judgement of one output element against its FP64 reference and error
// bound, written once for the host and the device (compare() on the host,
// the cuda backend's comparison kernel): the same rules give the same
// verdict wherever the data lives. Op-agnostic: the op's tolerance model
// supplies the numbers (docs/tolerance.md derives them). C++17 and
// host/device: nvcc compiles it into the cuda backend.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/hd.h"

namespace assay {

struct Tolerance {
  DType out = DType::f32;
  double u_eff = 0;        // effective unit roundoff of the whole computation
  double scale = 2;        // T: safety factor over the bound
  double u_epilogue = 0;   // one rounding of the epilogue's terms in the output type
  bool exact = false;      // exact values: elements whose bound fits exact_bits must match bit for bit
  int exact_bits = 0;
  bool poisoned = false;   // the output was poisoned before the call (no C0 to read)
  uint64_t poison = 0;
  // A kernel that may flush subnormals (spec `subnormals: flush`): an absolute
  // allowance added to every finite element, and NaN accepted where the
  // reference is infinite (a flushed factor of an infinite product gives 0*Inf).
  double abs_extra = 0;
  bool inf_may_be_nan = false;
  // Absolute error near zero of converting inputs into a narrower compute
  // type and of underflow in a coarser accumulator. Capped per element at
  // 3 * bound: rounding near zero moves a value by at most its own size, so
  // each product's share is at most 3 |alpha a b| (and 0 where bound is 0).
  double abs_floor = 0;
  // A finite reference whose bound exceeds this may come back as any of
  // +-Inf and NaN: the claimed compute type's accumulator overflows there.
  double nonfinite_above = INFINITY;
};

struct BadElement {
  int tensor = 0;                // which of the case's tensors (the op's judge sets it)
  int64_t row = 0, col = 0;      // in the tensor's matrix view (core/tensor_geom.h)
  double expected = 0, got = 0;  // expected: reference rounded to the output type
  double ulps = 0, ratio = 0;    // ratio: |got - expected| / allowed error
};

struct CompareStats {
  int64_t checked = 0, exact_checked = 0;
  int64_t bad = 0, bad_class = 0, unwritten = 0;
  double max_ulps = 0, max_ratio = 0;
  std::vector<BadElement> first_bad;  // a few, in index order
  // Over the elements where the output and the exact reference are both
  // finite: how many, and the sum of the squared errors (aggregate rules).
  int64_t finite = 0;
  double sq_error = 0;
  // An aggregate rule the elements broke together though each passed alone
  // (the bench's precision rule, docs/tolerance.md): a mismatch, and why.
  std::string excess;
};

inline constexpr int kKeepBadElements = 8;  // CompareStats::first_bad holds at most this many

// 2^n exactly, built from its bits where it is a normal double (the
// comparison takes one per element, and ldexp's general path cost more
// than the rest of an element's check on the GPU).
ASSAY_HD double pow2(int n) {
  if (n >= -1022 && n <= 1023) return f64_from_bits(uint64_t(n + 1023) << 52);
  return ldexp(1.0, n);
}

// Spacing of t around |x| (the subnormal spacing below the smallest normal).
// |x|'s binade comes from its exponent bits (frexp's general path was a
// tenth of an element's check on the GPU): a normal double is in
// [2^(E-1023), 2^(E-1022)); zero and subnormal doubles lie below every
// type's smallest normal; an infinite or NaN x takes the spacing at 2^1024,
// finite, so an infinite difference still exceeds what it allows.
ASSAY_HD double ulp_of(DType t, double x) {
  if (is_integer(t)) return 1.0;
  const int biased = int((f64_bits(x) >> 52) & 0x7ff);
  const int emin = min_normal_exp(t);
  const int exp = biased - 1023 > emin ? biased - 1023 : emin;
  return pow2(exp - (mantissa_bits(t) - 1));
}

// Monotonic integer image of a value of t: adjacent values differ by one.
ASSAY_HD int64_t ordered_image(DType t, double x) {
  if (is_integer(t)) return int64_t(decode(t, encode(t, x)));  // integers: the value itself
  const uint64_t bits = encode(t, x);
  const int width = dtype_bytes(t) * 8;
  const uint64_t sign = uint64_t(1) << (width - 1);
  const int64_t mag = int64_t(bits & (sign - 1));
  return (bits & sign) ? -mag : mag;
}

// Distance in units in the last place of t between two values of t.
ASSAY_HD double ulp_distance(DType t, double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return INFINITY;
  return fabs(double(ordered_image(t, x) - ordered_image(t, y)));
}

// ref is NaN or an infinity, and got is NaN too or the same infinity.
ASSAY_HD bool same_class(double got, double ref) { return std::isnan(ref) ? std::isnan(got) : std::isinf(ref) && got == ref; }

// More references (each as many doubles as the output has elements), on
// the inputs converted into the compute type, whose NaN/Inf class an element
// may also have (docs/tolerance.md, "Narrow compute").
struct ClassRefs {
  static constexpr int kMax = 4;
  const double* ref[kMax] = {};
  int count = 0;
  ASSAY_HD bool class_of_one(int64_t i, double got) const {
    for (int k = 0; k < count; ++k)
      if (same_class(got, ref[k][i])) return true;
    return false;
  }
};

// How one element fared.
struct ElementVerdict {
  bool ok = true, class_error = false, unwritten = false, exact = false;
  double expected = 0, got = 0, allowed = 0;
};

// Element i (row-major in the matrix view) with stored bits `bits`, its
// reference, bound and epilogue terms (terms: 0 when the op has none).
ASSAY_HD ElementVerdict check_element(const Tolerance& tol, DType stored, uint64_t bits, double exact_ref,
                                      double bound, double terms, const ClassRefs& classes, int64_t i) {
  ElementVerdict v;
  v.got = decode(stored, bits);
  v.expected = round_to(tol.out, exact_ref);
  const double got = v.got, expected = v.expected;
  if (tol.poisoned && bits == tol.poison) {
    v.unwritten = true, v.ok = false;
  } else if (is_integer(stored)) {
    // Integers (indices, counts) are exact: no ulps, no NaN classes.
    v.exact = true, v.ok = got == expected;
  } else if (std::isnan(exact_ref) || std::isinf(exact_ref)) {
    v.ok = same_class(got, exact_ref) || (tol.inf_may_be_nan && std::isnan(got)) || classes.class_of_one(i, got);
    v.class_error = !v.ok;
  } else if (!std::isfinite(got)) {
    // A finite result may turn non-finite only where the output type
    // overflows, where the compute type's accumulator may, or where
    // converting the inputs into the compute type made it non-finite.
    v.ok = (std::isinf(got) && std::isinf(expected) && (got > 0) == (exact_ref > 0)) || bound > tol.nonfinite_above ||
           classes.class_of_one(i, got);
    v.class_error = !v.ok;
  } else if (tol.exact && bound <= pow2(tol.exact_bits)) {
    v.exact = true, v.ok = got == expected;
  } else {
    double allowed = tol.scale * tol.u_eff * bound + ulp_of(tol.out, fmax(fabs(expected), fabs(got)));
    allowed += tol.scale * tol.u_epilogue * terms;
    allowed += tol.abs_extra + fmin(tol.abs_floor, 3.0 * bound);
    v.allowed = allowed;
    v.ok = fabs(got - expected) <= allowed;
  }
  return v;
}

// The error ratio an element reports: |got - expected| / allowed, 0 or Inf
// where nothing was allowed (exact or class checks).
ASSAY_HD double ratio_of(const ElementVerdict& v) {
  return v.allowed > 0 ? fabs(v.got - v.expected) / v.allowed : (v.ok ? 0 : INFINITY);
}

}  // namespace assay
