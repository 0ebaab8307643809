#include "shrink/trials.h"

#include <algorithm>

#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"

namespace assay::shrink_detail {

bool inside_spec(const Spec& spec, const Case& c) {
  gemm::Context ctx(c);
  return std::all_of(spec.requires_.begin(), spec.requires_.end(), [&](auto& r) { return r.holds(ctx); });
}

// The YAML text names everything that makes a case, the keep lists included.
std::string Trials::key(const Case& c) {
  Case k = c;
  k.origin.clear();
  return to_yaml(k);
}

bool Trials::still_fails(const Case& c) {
  if (exhausted()) return false;
  if (!tried_.insert(key(c)).second) return false;
  if (!inside_spec(spec_, c)) return false;
  ++attempts_;
  CaseOutcome o;
  try {
    o = clock_.run(probe_, c);
  } catch (const DeadlineReached&) {
    stopped_ = true;  // the shrink ends with its best case so far
    return false;
  }
  if (o.verdict != target_) return false;
  last_ = o;
  return true;
}

LayoutParts layout_parts(const Layout& l, int64_t rows, int64_t cols) {
  const bool col = l.row_stride == 1 && l.col_stride != 1;
  const int64_t pad = col ? l.col_stride - std::max<int64_t>(rows, 1) : l.row_stride - std::max<int64_t>(cols, 1);
  return {col, std::max<int64_t>(pad, 0), l.offset};
}

Case with_dims(const Case& c, int64_t m, int64_t n, int64_t k, bool keep_layout) {
  Case x = c;
  x.m = m, x.n = n, x.k = k;
  // Padding is kept as padding (beyond the new rows or columns), not as a stride.
  auto relayout = [&](const Layout& old, int64_t old_rows, int64_t old_cols, int64_t rows, int64_t cols) {
    const LayoutParts p = layout_parts(old, old_rows, old_cols);
    return gemm::make_layout(rows, cols, p.col_major, keep_layout ? p.pad : 0, keep_layout ? p.offset : 0);
  };
  x.a = relayout(c.a, c.m, c.k, m, k), x.b = relayout(c.b, c.k, c.n, k, n), x.c = relayout(c.c, c.m, c.n, m, n);
  return x;
}

}  // namespace assay::shrink_detail
