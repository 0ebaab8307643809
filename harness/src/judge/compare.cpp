#include "judge/compare.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace assay {

ClassRefs class_refs_of(std::span<const double* const> refs) {
  if (refs.size() > size_t(ClassRefs::kMax)) throw InfraError("more class references than a comparison takes");
  ClassRefs c;
  for (const double* r : refs) c.ref[c.count++] = r;
  return c;
}

CompareStats compare(const Tolerance& tol, const TensorGeom& g, const std::byte* out, const double* ref,
                     const double* bound, const double* terms, std::span<const double* const> class_refs) {
  CompareStats s;
  const ClassRefs classes = class_refs_of(class_refs);
  const int size = dtype_bytes(g.dtype);
  const int64_t rows = g.rows(), cols = g.cols();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = r * cols + c;
      const uint64_t bits = load_bits(g.dtype, out + g.index(r, c) * size);
      const ElementVerdict v = check_element(tol, g.dtype, bits, ref[i], bound[i], terms ? terms[i] : 0.0, classes, i);
      ++s.checked;
      s.unwritten += v.unwritten, s.exact_checked += v.exact;
      if (std::isfinite(v.got) && std::isfinite(ref[i])) ++s.finite, s.sq_error += (v.got - ref[i]) * (v.got - ref[i]);
      const double ulps = ulp_distance(tol.out, v.got, v.expected), ratio = ratio_of(v);
      if (std::isfinite(ulps)) s.max_ulps = std::max(s.max_ulps, ulps);
      if (!v.ok || v.allowed > 0) s.max_ratio = std::max(s.max_ratio, ratio);
      if (v.ok) continue;
      ++s.bad;
      if (v.class_error) ++s.bad_class;
      if (s.first_bad.size() < size_t(kKeepBadElements)) s.first_bad.push_back({0, r, c, v.expected, v.got, ulps, ratio});
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
    if (total.first_bad.size() >= size_t(kKeepBadElements)) break;
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
