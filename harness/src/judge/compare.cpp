#include "judge/compare.h"

#include <algorithm>
#include <cmath>

namespace assay {
namespace {

constexpr size_t kKeepBad = 8;

// Monotonic integer image of a value of t: adjacent values differ by one.
int64_t ordered(DType t, double x) {
  if (is_integer(t)) return int64_t(decode(t, encode(t, x)));  // integers: the value itself
  uint64_t bits = encode(t, x);
  int width = dtype_bytes(t) * 8;
  uint64_t sign = uint64_t(1) << (width - 1);
  int64_t mag = int64_t(bits & (sign - 1));
  return (bits & sign) ? -mag : mag;
}

// ref is NaN or an infinity, and got is NaN too or the same infinity.
bool same_class(double got, double ref) {
  return std::isnan(ref) ? std::isnan(got) : std::isinf(ref) && got == ref;
}

// got has the NaN/Inf class of element i of one of the references.
bool class_of_one(std::span<const double* const> refs, int64_t i, double got) {
  for (const double* r : refs)
    if (same_class(got, r[i])) return true;
  return false;
}

}  // namespace

double ulp_of(DType t, double x) {
  if (is_integer(t)) return 1.0;
  int e = 0;
  std::frexp(std::fabs(x), &e);  // |x| in [2^(e-1), 2^e); e = 0 for x = 0
  int emin = min_normal_exp(t);
  int exp = x == 0 ? emin : std::max(e - 1, emin);
  return std::ldexp(1.0, exp - (mantissa_bits(t) - 1));
}

double ulp_distance(DType t, double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return INFINITY;
  return std::fabs(double(ordered(t, x) - ordered(t, y)));
}

CompareStats compare(const Tolerance& tol, const TensorGeom& g, const std::byte* out, const double* ref,
                     const double* bound, const double* terms, std::span<const double* const> class_refs) {
  CompareStats s;
  const int size = dtype_bytes(g.dtype);
  const double exact_limit = std::ldexp(1.0, tol.exact_bits);
  const int64_t rows = g.rows(), cols = g.cols();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = r * cols + c;
      const uint64_t bits = load_bits(g.dtype, out + g.index(r, c) * size);
      const double got = decode(g.dtype, bits), exact_ref = ref[i];
      const double expected = round_to(tol.out, exact_ref);
      ++s.checked;
      bool ok, class_error = false;
      double allowed = 0;
      if (tol.poisoned && bits == tol.poison) {
        ++s.unwritten;
        ok = false;
      } else if (is_integer(g.dtype)) {
        // Integers (indices, counts) are exact: no ulps, no NaN classes.
        ++s.exact_checked;
        ok = got == expected;
      } else if (std::isnan(exact_ref) || std::isinf(exact_ref)) {
        ok = same_class(got, exact_ref) || (tol.inf_may_be_nan && std::isnan(got)) || class_of_one(class_refs, i, got);
        class_error = !ok;
      } else if (!std::isfinite(got)) {
        // A finite result may turn non-finite only where the output type
        // overflows, where the compute type's accumulator may, or where
        // converting the inputs into the compute type made it non-finite.
        ok = (std::isinf(got) && std::isinf(expected) && (got > 0) == (exact_ref > 0)) ||
             bound[i] > tol.nonfinite_above || class_of_one(class_refs, i, got);
        class_error = !ok;
      } else if (tol.exact && bound[i] <= exact_limit) {
        ++s.exact_checked;
        ok = got == expected;
      } else {
        allowed = tol.scale * tol.u_eff * bound[i] + ulp_of(tol.out, std::max(std::fabs(expected), std::fabs(got)));
        if (terms) allowed += tol.scale * tol.u_epilogue * terms[i];
        allowed += tol.abs_extra + std::min(tol.abs_floor, 3.0 * bound[i]);
        ok = std::fabs(got - expected) <= allowed;
      }
      if (std::isfinite(got) && std::isfinite(exact_ref)) ++s.finite, s.sq_error += (got - exact_ref) * (got - exact_ref);
      const double ulps = ulp_distance(tol.out, got, expected);
      const double ratio = allowed > 0 ? std::fabs(got - expected) / allowed : (ok ? 0 : INFINITY);
      if (std::isfinite(ulps)) s.max_ulps = std::max(s.max_ulps, ulps);
      if (!ok || allowed > 0) s.max_ratio = std::max(s.max_ratio, ratio);
      if (ok) continue;
      ++s.bad;
      if (class_error) ++s.bad_class;
      if (s.first_bad.size() < kKeepBad) s.first_bad.push_back({0, r, c, expected, got, ulps, ratio});
    }
  return s;
}

void accumulate(CompareStats& total, const CompareStats& block, int64_t row0) {
  total.checked += block.checked, total.exact_checked += block.exact_checked;
  total.bad += block.bad, total.bad_class += block.bad_class, total.unwritten += block.unwritten;
  total.max_ulps = std::max(total.max_ulps, block.max_ulps);
  total.max_ratio = std::max(total.max_ratio, block.max_ratio);
  total.finite += block.finite, total.sq_error += block.sq_error;
  if (total.excess.empty()) total.excess = block.excess;
  for (BadElement e : block.first_bad) {
    if (total.first_bad.size() >= kKeepBad) break;
    e.row += row0;
    total.first_bad.push_back(e);
  }
}

Verdict verdict_of(const CompareStats& s) {
  if (s.bad == 0) return s.excess.empty() ? Verdict::pass : Verdict::mismatch;
  if (s.unwritten > 0) return Verdict::unwritten_output;
  if (s.bad_class > 0) return Verdict::nan_mismatch;
  return Verdict::mismatch;
}

}  // namespace assay
