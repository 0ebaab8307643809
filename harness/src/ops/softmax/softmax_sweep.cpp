#include "ops/softmax/softmax_sweep.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "case/rng.h"
#include "ops/softmax/softmax_reference.h"

namespace assay::softmax {
namespace {

constexpr Recipe kRecipes[] = {Recipe::uniform, Recipe::ints, Recipe::mixed, Recipe::specials};
constexpr int64_t kRowLengths[] = {1, 2, 3, 31, 32, 33, 1023, 1024, 1025};
using rows::kPastWord;
using rows::padded;
using rows::transposed;

// The sum of a row of n terms of at most 1 passes f16's largest value past
// 65504 terms: an f16 accumulator's own limit, outside what compute f16 claims.
int64_t max_row_length(const Spec& spec) { return spec.compute == Compute::f16 ? 32768 : int64_t(1) << 40; }

// softmax's Parts over the rows sweep builder: each case starts plain, with
// the recipes taken in turn.
struct SweepBuilder {
  const Spec& spec;
  bool log;
  rows::SweepBuilder cases;

  SweepBuilder(const Spec& s, bool l, uint64_t seed)
      : spec(s), log(l), cases(seed, [&s](const Case& c) { return fit_requires(c, s); }) {}
  void section() { cases.section(); }
  Parts base(int64_t rows, int64_t n, std::string origin) const {
    Parts p = plain_parts(spec, log, Shape{false, 1, rows, n}, std::move(origin));
    p.recipe = kRecipes[cases.made() % 4];
    return p;
  }
  Parts batched(int64_t b, int64_t rows, int64_t n, std::string origin) const {
    Parts p = base(rows, n, std::move(origin));
    p.shape = Shape{true, b, rows, n};
    return p;
  }
  void add(const Parts& p) {
    if (p.shape.n <= max_row_length(spec)) cases.add(make_case(p));
  }
  std::vector<Case> interleaved() const { return cases.interleaved(); }
};

}  // namespace

RecipeParams recipe_params(const Case& c, int tensor) {
  RecipeParams p;
  p.recipe = c.recipe;
  if (tensor != X) return p;  // y is never drawn (poisoned)
  p.keep = c.tensors[X].keep;
  const int64_t n = std::max<int64_t>(shape_of(c).n, 1);
  switch (c.recipe) {
    case Recipe::ints: p.int_range = 3, p.density = 1.0; break;  // ties: 6 values
    case Recipe::mixed:
      // Logits up to +-2^7: past 88.7 exp overflows f32 unless the max is
      // subtracted (past 11.1 for f16), and differences down to -256 give
      // subnormal and zero outputs.
      p.exp_lo = -6, p.exp_hi = 7;
      break;
    case Recipe::specials:
      // About one special value a row (+-0, +-Inf, NaN, subnormals), so many
      // rows hold exactly one -Inf, +Inf or NaN; and one row in eight all
      // -Inf (a fully masked row).
      p.density = std::min(0.5, 1.0 / double(n));
      p.row_fill = 0.125, p.row_value = -INFINITY;
      break;
    case Recipe::uniform:
    case Recipe::offset:  // the default large mean over a small spread
      break;
  }
  return p;
}

double work(const Case& c) { return shape_of(c).elements(); }

double case_bytes(const Case& c) { return rows::case_bytes(c, 16.0); }  // the reference's ref and bound
double host_bytes(const Case& c, BackendKind backend) { return rows::host_bytes(c, backend, 16.0); }

double default_timeout(const Case& c, BackendKind backend) {
  // A naive kernel: three passes with an exp (host ~10 M elements/s, GPU ~1 G/s), plus 5 s.
  return 5.0 + work(c) / (backend == BackendKind::host ? 5e6 : 1e9);
}

bool huge_case_fits(const Case& c, const SweepTarget& target) {
  return target.backend == BackendKind::cuda && case_bytes(c) <= target.max_bytes &&
         host_bytes(c, target.backend) <= target.max_host_bytes;
}

std::optional<Case> fit_requires(const Case& c, const Spec& spec) {
  const Parts p = parts_of(c);
  return rows::fit_requires(
      spec, c, [](const Case& x) { return std::make_unique<Context>(x); },
      [&p](const Shape& s, int relax) {
        Parts q = p;
        q.shape = s;
        if (relax == 1) q.x = rows::plain_like(p.x), q.y = rows::plain_like(p.y);
        if (relax == 2) q.x = q.y = Layout{};
        if (relax == 3) q.x = q.y = transposed();
        if (!s.batched) q.x.batch_gap = q.y.batch_gap = 0;
        return make_case(q);
      });
}

std::vector<Case> sweep(const Spec& spec, bool log, uint64_t seed, const SweepTarget& target) {
  SweepBuilder b(spec, log, seed);
  // 1. Row lengths around warp and block sizes, few and several rows, every recipe.
  for (int64_t n : kRowLengths)
    for (int64_t rows : {1, 4}) b.add(b.base(rows, n, "row length"));
  b.add(b.base(2, kPastWord, "row length past 2^16"));
  b.section();
  // 2. Row counts: one, a few, many, past 65,535 (a grid limit; cheap with short rows).
  for (int64_t rows : {1, 2, 5, 64, 1000}) b.add(b.base(rows, 33, "row count"));
  b.add(b.base(65537, 3, "rows past 65,535"));
  b.add(b.base(70001, 1, "rows past 65,535"));
  b.add(b.base(65536 + 33, 32, "rows past 65,535"));
  b.section();
  // 3. Every recipe at a few telling shapes.
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{16, 33}, {8, 1024}, {64, 257}, {3, 4097}, {2, kPastWord}})
    for (Recipe r : kRecipes) {
      Parts p = b.base(rows, n, "recipe");
      p.recipe = r;
      b.add(p);
    }
  b.section();
  // 4. Special values: a row with exactly one -Inf, +Inf or NaN, fully masked
  // rows (specials plant one row in eight all -Inf), at short and long rows.
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{64, 1}, {64, 2}, {64, 3}, {64, 33}, {32, 32}, {200, 7},
                         {16, 1025}, {8, 4096}}) {
    Parts p = b.base(rows, n, "specials");
    p.recipe = Recipe::specials;
    b.add(p);
  }
  b.section();
  // 5. Ties (ints) and subnormal outputs (mixed: differences to -256).
  for (int64_t n : {2, 3, 32, 33, 1025}) {
    Parts p = b.base(16, n, "ties");
    p.recipe = Recipe::ints;
    b.add(p);
    p.recipe = Recipe::mixed, p.origin = "subnormal outputs";
    b.add(p);
  }
  b.section();
  // 6. Layouts: x and y each transposed (rows strided: last-dim stride > 1),
  // padded, offset; both at once.
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{37, 45}, {5, 1025}, {33, 3}}) {
    for (int which = 0; which < 3; ++which)
      for (int kind = 0; kind < 4; ++kind) {
        Parts p = b.base(rows, n, "layout");
        const Layout l = kind == 0 ? transposed() : kind == 1 ? padded(3) : kind == 2 ? padded(0, 1) : transposed(2, 1);
        if (which != 1) p.x = l;
        if (which != 0) p.y = l;
        p.origin = std::string("layout ") + (which == 0 ? "x" : which == 1 ? "y" : "x, y") +
                   (kind == 0 ? " transposed" : kind == 1 ? " padded" : kind == 2 ? " offset+1" : " transposed padded offset");
        b.add(p);
      }
  }
  b.section();
  // 7. Batches: 3-D x and y with a batch stride past the inner span.
  for (auto [bs, rows, n] : {std::tuple<int64_t, int64_t, int64_t>{3, 5, 33}, {2, 64, 1024}, {4, 3, 3}, {5, 1, 31},
                             {2, 17, 1025}}) {
    Parts p = b.batched(bs, rows, n, "batch");
    b.add(p);
    p.x.batch_gap = 7, p.y.batch_gap = 3, p.origin = "batch, gaps between batches";
    b.add(p);
    p.x.col_major = true, p.origin = "batch, gaps, x transposed";
    b.add(p);
  }
  b.section();
  // 8. Large cases (the host skips what exceeds its limits).
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{1024, 1024}, {64, 65536}, {4096, 4096}, {16384, 1000},
                         {256, 262144}})
    b.add(b.base(rows, n, "large"));
  b.section();
  // 9. Index and grid limits: rows past 2^20, a row past 2^20, and where the
  // budget holds it, x past 2^31 elements (32-bit offsets overflow).
  b.add(b.base((int64_t(1) << 20) + 7, 33, "rows past 2^20"));
  b.add(b.base(3, (int64_t(1) << 20) + 7, "row past 2^20"));
  {
    Parts p = b.base(65537, 32769, "x past 2^31 elements");
    if (huge_case_fits(make_case(p), target)) b.add(p);
  }
  return b.interleaved();
}

std::optional<Case> random_case(const Spec& spec, bool log, uint64_t seed, uint64_t index, const GenLimits& lim) {
  rows::RandomDraw draw(seed, 0x50f7, index);
  Parts p = plain_parts(spec, log, draw.shape(lim, max_row_length(spec)), "random #" + std::to_string(index));
  p.x = draw.layout(p.shape), p.y = draw.layout(p.shape);
  p.recipe = draw.recipe(kRecipes);
  p.seed = draw.next();
  return fit_requires(make_case(p), spec);
}

}  // namespace assay::softmax
