#include "ops/reduce/reduce_sweep.h"

#include <algorithm>
#include <cmath>

#include "case/rng.h"

namespace assay::reduce {
namespace {

using rows::Layout;
using rows::Shape;

int ceil_log2(int64_t v) {
  int e = 0;
  while ((int64_t(1) << e) < v && e < 62) ++e;
  return e;
}
int floor_log2(double v) {
  int e = 0;
  std::frexp(v, &e);
  return e - 1;
}

}  // namespace

int64_t max_row_length(const Spec& spec, const Settings& s) {
  if (is_extreme(s.op)) return int64_t(1) << 40;
  // gamma_{n-1} needs (n - 1) u < 1/2: f16 and bf16 accumulators give no
  // useful bound on longer rows (docs/tolerance.md, "reduce").
  return spec.compute == Compute::f16 ? 1024 : spec.compute == Compute::bf16 ? 128 : int64_t(1) << 40;
}

RecipeParams recipe_params(const Case& c, int tensor, const Settings& s, Compute compute) {
  RecipeParams p;
  p.recipe = c.recipe;
  if (tensor != X) return p;  // y is never drawn (poisoned)
  p.keep = c.tensors[X].keep;
  const DType x = c.tensors[X].dtype;
  const int64_t n = std::max<int64_t>(rows::shape_of(c).n, 1);
  switch (c.recipe) {
    case Recipe::ints:
      // |x| <= 3: exact sums in any order; 7 values, so ties everywhere. The
      // extremes get +-4 at the first, middle, last or both end positions of
      // half the rows: a unique extreme at a row's edge, or a tie at both.
      p.int_range = 3, p.density = 1.0;
      if (is_extreme(s.op)) {
        const bool low = s.op == Reduction::min || s.op == Reduction::argmin;
        p.plant_fill = 0.5, p.plant_value = low ? -4.0 : 4.0, p.plant_cols = n;
      }
      break;
    case Recipe::mixed: {
      // Huge and tiny magnitudes: from a few subnormal spacings of x's type
      // up to where the compute type (and for sums, n terms) stays finite.
      const int lo = min_normal_exp(x) - (mantissa_bits(x) - 1) + 4;
      int hi = std::min(floor_log2(max_finite(x)), floor_log2(format_of(compute).max)) - 1;
      if (!is_extreme(s.op)) hi -= ceil_log2(n + 1) + 1;
      p.exp_lo = lo, p.exp_hi = std::max(lo, hi);
      break;
    }
    case Recipe::specials:
      // About one random special a row (+-0, +-Inf, NaN, subnormals), one
      // row in 16 all NaN, and a NaN planted at the start, middle or end (or
      // both ends) of half the rows: where fmax and NaN propagation part.
      p.density = std::min(0.5, 0.5 / double(n));
      p.row_fill = 1.0 / 16, p.row_value = NAN;
      p.plant_fill = 0.5, p.plant_value = NAN, p.plant_cols = n;
      break;
    case Recipe::offset:
      // All negative, in [-3, -1): a max started at 0 is wrong on every row,
      // and same-sign sums grow (an f16 accumulator stalls past 2^11).
      p.center = -2.0, p.spread = 1.0;
      break;
    case Recipe::uniform: break;
  }
  return p;
}

double work(const Case& c) { return rows::shape_of(c).elements(); }

namespace {
double per_element(const Case& c) { return 16.0 / double(std::max<int64_t>(rows::shape_of(c).n, 1)); }
}  // namespace

double case_bytes(const Case& c) { return rows::case_bytes(c, per_element(c)); }
double host_bytes(const Case& c, BackendKind backend) { return rows::host_bytes(c, backend, per_element(c)); }

double default_timeout(const Case& c, BackendKind backend) {
  // A naive kernel: one pass (host ~20 M elements/s, GPU ~1 G/s), plus 5 s.
  return 5.0 + work(c) / (backend == BackendKind::host ? 2e7 : 1e9);
}

bool huge_case_fits(const Case& c, const SweepTarget& target) {
  return target.backend == BackendKind::cuda && case_bytes(c) <= target.max_bytes &&
         host_bytes(c, target.backend) <= target.max_host_bytes;
}

std::optional<Case> fit_requires(const Case& c, const Spec& spec) {
  const Parts p = parts_of(c);
  auto remake = [&](const Shape& s, int relax) {
    Parts q = p;
    q.shape = s;
    if (relax == 1) q.x = rows::plain_like(p.x), q.y = rows::plain_like(p.y);
    if (relax == 2) q.x = q.y = Layout{};
    if (relax == 3) q.x = rows::transposed(), q.y = Layout{};
    if (!s.batched) q.x.batch_gap = q.y.batch_gap = 0;
    return make_case(q);
  };
  auto context = [](const Case& x) -> std::unique_ptr<EvalContext> { return std::make_unique<Context>(x); };
  return rows::fit_requires(spec, c, context, remake);
}

std::vector<Case> sweep(const Spec& spec, const Settings& s, uint64_t seed, const SweepTarget& target) {
  rows::SweepBuilder b(seed, [&](const Case& c) { return fit_requires(c, spec); });
  const int64_t max_n = max_row_length(spec, s);
  const bool cuda = target.backend == BackendKind::cuda;
  size_t turn = 0;
  auto parts = [&](int64_t rows, int64_t n, const char* origin) {
    Parts p = plain_parts(spec, s, Shape{false, 1, rows, n}, origin);
    p.recipe = kRecipes[turn++ % std::size(kRecipes)];
    return p;
  };
  auto add = [&](const Parts& p) {
    if (p.shape.n > max_n || (p.shape.n == 0 && is_extreme(s.op))) return;
    b.add(make_case(p));
  };
  auto with = [](Parts p, Recipe r) {
    p.recipe = r;
    return p;
  };
  // 1. Row lengths around warp, block and tile sizes and past 2^16, one row
  //    and a few, the recipes in turn.
  for (int64_t n : rows::kRowLengths)
    for (int64_t rows : {1, 4}) add(parts(rows, n, "row length"));
  add(parts(2, rows::kPastWord, "row length past 2^16"));
  add(with(parts(4, 0, "empty rows (n = 0)"), Recipe::uniform));
  b.section();
  // 2. Row counts: one, a few, many, past 65,535 (a grid limit; short rows).
  for (int64_t rows : {1, 2, 5, 64, 1000}) add(parts(rows, 33, "row count"));
  add(parts(65537, 3, "rows past 65,535"));
  add(parts(70001, 1, "rows past 65,535"));
  add(parts(65536 + 33, 32, "rows past 65,535"));
  b.section();
  // 3. Every recipe at a few telling shapes.
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{16, 33}, {8, 1024}, {64, 257}, {3, 4097}, {2, rows::kPastWord}})
    for (Recipe r : kRecipes) add(with(parts(rows, n, "recipe"), r));
  b.section();
  // 4. Special values: NaN planted at a row's start, middle, end or both ends
  //    (rows in turn), random +-Inf, NaN, +-0 and subnormals, all-NaN rows.
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{64, 1}, {64, 2}, {64, 3}, {64, 33}, {32, 32}, {200, 7},
                         {16, 1025}, {8, 4096}})
    add(with(parts(rows, n, "specials"), Recipe::specials));
  b.section();
  // 5. Ties (ints, the extreme planted at the first, middle, last and both
  //    end indices) and all-negative, same-sign rows (offset), short to past 2^16.
  for (int64_t n : {2, 3, 32, 33, 64, 65, 1025}) add(with(parts(16, n, "ties"), Recipe::ints));
  for (int64_t n : {int64_t(1), int64_t(3), int64_t(33), int64_t(1025), rows::kPastWord})
    add(with(parts(4, n, "all negative, same sign"), Recipe::offset));
  b.section();
  // 6. Layouts: x transposed (rows strided), padded, offset; y strided
  //    (padded) and offset; both at once.
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{37, 45}, {5, 1025}, {33, 3}}) {
    for (int kind = 0; kind < 4; ++kind) {
      Parts p = parts(rows, n, "layout x");
      p.x = kind == 0 ? rows::transposed() : kind == 1 ? rows::padded(3) : kind == 2 ? rows::padded(0, 1)
                                                                                       : rows::transposed(2, 1);
      p.origin = kind == 0 ? "layout x transposed" : kind == 1 ? "layout x padded" : kind == 2 ? "layout x offset+1"
                                                                                          : "layout x transposed padded offset";
      add(p);
    }
    Parts p = parts(rows, n, "layout y strided");
    p.y = rows::padded(2);
    add(p);
    p.y = rows::padded(0, 3), p.origin = "layout y offset+3";
    add(p);
    p.x = rows::transposed(1, 2), p.y = rows::padded(1, 1), p.origin = "layout x, y";
    add(p);
  }
  b.section();
  // 7. Batches: 3-D x and 2-D y with gaps between batches, x transposed.
  for (auto [bs, rows, n] : {std::tuple<int64_t, int64_t, int64_t>{3, 5, 33}, {2, 64, 1024}, {4, 3, 3}, {5, 1, 31},
                             {2, 17, 1025}}) {
    Parts p = parts(rows, n, "batch");
    p.shape = Shape{true, bs, rows, n};
    add(p);
    p.x.batch_gap = 7, p.y.batch_gap = 3, p.origin = "batch, gaps between batches";
    add(p);
    p.x.col_major = true, p.origin = "batch, gaps, x transposed";
    add(p);
  }
  b.section();
  // 8. Larger cases; on the host only what a plain loop does in a blink.
  add(parts(1024, 1024, "large"));
  if (cuda) {
    for (auto [rows, n] : {std::pair<int64_t, int64_t>{64, 65536}, {4096, 4096}, {16384, 1000}, {256, 262144}})
      add(parts(rows, n, "large"));
    // 9. Index and grid limits: rows past 2^20, a row past 2^20, x past 2^31
    //    elements where the budget holds it.
    add(parts((int64_t(1) << 20) + 7, 33, "rows past 2^20"));
    add(parts(3, (int64_t(1) << 20) + 7, "row past 2^20"));
    Parts p = parts(65537, 32769, "x past 2^31 elements");
    if (huge_case_fits(make_case(p), target)) add(p);
  }
  return b.interleaved();
}

std::optional<Case> random_case(const Spec& spec, const Settings& s, uint64_t seed, uint64_t index,
                                const GenLimits& lim) {
  rows::RandomDraw d(seed, 0x7265, index);
  Parts p = plain_parts(spec, s, d.shape(lim, max_row_length(spec, s)), "random #" + std::to_string(index));
  if (is_extreme(s.op)) p.shape.n = std::max<int64_t>(p.shape.n, 1);
  p.x = d.layout(p.shape), p.y = d.layout(p.shape);
  p.y.col_major = false;
  p.recipe = d.recipe(kRecipes);
  p.seed = d.next();
  return fit_requires(make_case(p), spec);
}

}  // namespace assay::reduce
