#include "ops/norm/norm_sweep.h"

#include <algorithm>
#include <cmath>

#include "case/rng.h"

namespace assay::norm {
namespace {

using rows::Layout;
using rows::Shape;

constexpr int64_t kPastWord = rows::kPastWord;

struct Builder {
  const Spec& spec;
  bool rms;
  rows::SweepBuilder b;

  Parts base(int64_t nrows, int64_t n, std::string origin, Recipe r = Recipe::uniform, double eps = 1e-5) const {
    Parts p = plain_parts(spec, rms, Shape{false, 1, nrows, n}, std::move(origin));
    p.recipe = r, p.eps = eps;
    return p;
  }
  Parts batched(int64_t bs, int64_t nrows, int64_t n, std::string origin) const {
    Parts p = base(nrows, n, std::move(origin));
    p.shape = Shape{true, bs, nrows, n};
    return p;
  }
  void add(const Parts& p) { b.add(make_case(p)); }
};

}  // namespace

RecipeParams recipe_params(const Case& c, int tensor) {
  RecipeParams p;
  p.recipe = c.recipe;
  if (c.tensors[size_t(tensor)].role != Role::input) return p;  // outputs are poisoned, never drawn
  p.keep = c.tensors[size_t(tensor)].keep;
  if (tensor != 0) {
    // weight and bias: uniform reals whatever x's recipe (small integers
    // under ints, so integer cases stay integer).
    p.recipe = c.recipe == Recipe::ints ? Recipe::ints : Recipe::uniform;
    p.int_range = 2, p.density = 1.0;
    return p;
  }
  const int64_t n = std::max<int64_t>(rows::shape_of(c).n, 1);
  const DType t = c.tensors[0].dtype;
  switch (c.recipe) {
    case Recipe::ints:
      // Small integers, and one row in eight constant (var = 0: eps decides).
      p.int_range = 3, p.density = 1.0, p.row_fill = 0.125, p.row_value = 3.0;
      break;
    case Recipe::mixed:
      // Huge and tiny magnitudes in one row: 2^-60 .. 2^50 (f16: 2^-14 .. 2^7),
      // squares and their sums of up to 2^20 terms inside f32's range.
      p.exp_lo = t == DType::f16 ? -14 : -60, p.exp_hi = t == DType::f16 ? 7 : 50;
      break;
    case Recipe::specials:
      p.density = std::min(0.5, 1.0 / double(n));  // about one NaN, +-Inf, +-0 or subnormal a row
      break;
    case Recipe::offset: break;  // mean 1e4, sigma 1e-2 (values.h defaults)
    case Recipe::uniform: break;
  }
  return p;
}

double work(const Case& c) { return rows::shape_of(c).elements(); }

// ref and bound of y per element (16 bytes), the statistics per row (32):
// at most 48 bytes per element of a block.
double case_bytes(const Case& c) { return rows::case_bytes(c, 48.0); }
double host_bytes(const Case& c, BackendKind backend) { return rows::host_bytes(c, backend, 48.0); }

double default_timeout(const Case& c, BackendKind backend) {
  // A naive kernel: three passes (host ~10 M elements/s, GPU ~1 G/s), plus 5 s.
  return 5.0 + work(c) / (backend == BackendKind::host ? 5e6 : 1e9);
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
    for (int slot = 0; slot < kSlots; ++slot) {
      Layout& l = q.layout[slot];
      if (relax == 1) l = rows::plain_like(l);
      if (relax == 2) l = Layout{};
      if (relax == 3) l = Layout{slot_kind(slot) == rows::Kind::element, 0, 0, 0, false};
    }
    return make_case(q);
  };
  auto context = [](const Case& x) -> std::unique_ptr<EvalContext> { return std::make_unique<Context>(x); };
  return rows::fit_requires(spec, c, context, remake);
}

std::vector<Case> sweep(const Op&, const Spec& spec, bool rms, uint64_t seed, const SweepTarget& target) {
  Builder b{spec, rms, rows::SweepBuilder(seed, [&spec](const Case& c) { return fit_requires(c, spec); })};
  // 1. Row lengths around warp, block and tile sizes, one row and a few, and past 2^16.
  int k = 0;
  for (int64_t n : rows::kRowLengths)
    for (int64_t r : {1, 4}) b.add(b.base(r, n, "row length", k++ % 2 ? Recipe::ints : Recipe::uniform));
  b.add(b.base(2, kPastWord, "row length past 2^16"));
  b.add(b.base(2, kPastWord, "row length past 2^16", Recipe::ints));
  b.b.section();
  // 2. Row counts: one, a few, many, past 65,535 (a grid limit; cheap with short rows).
  for (int64_t r : {1, 2, 5, 64, 1000}) b.add(b.base(r, 33, "row count"));
  b.add(b.base(65537, 3, "rows past 65,535"));
  b.add(b.base(70001, 1, "rows past 65,535"));
  b.add(b.base(65536 + 33, 32, "rows past 65,535"));
  b.b.section();
  // 3. Cancellation: mean 1e4, sigma 1e-2 (E[x^2] - E[x]^2 loses every digit
  // in f32); short rows first, where the bound is tight (docs/tolerance.md).
  for (auto [r, n] : {std::pair<int64_t, int64_t>{64, 2}, {64, 3}, {32, 8}, {16, 33}, {8, 1024}, {2, 4097}, {2, kPastWord}})
    b.add(b.base(r, n, "offset: mean 1e4, sigma 1e-2", Recipe::offset));
  b.b.section();
  // 4. Constant rows (ints: one row in eight constant, var = 0), several eps.
  for (auto [r, n] : {std::pair<int64_t, int64_t>{64, 2}, {64, 33}, {16, 1025}})
    b.add(b.base(r, n, "constant rows", Recipe::ints));
  for (double eps : {1e-3, 1e-6}) b.add(b.base(64, 33, "constant rows, eps", Recipe::ints, eps));
  b.b.section();
  // 5. Magnitudes (huge and tiny in one row) and special values (NaN, +-Inf,
  // subnormals) at chosen row lengths.
  for (auto [r, n] : {std::pair<int64_t, int64_t>{16, 33}, {8, 1024}, {4, 4097}, {2, kPastWord}})
    b.add(b.base(r, n, "magnitudes 2^-60..2^50", Recipe::mixed));
  for (auto [r, n] : {std::pair<int64_t, int64_t>{64, 1}, {64, 3}, {64, 33}, {16, 1025}, {8, 4096}})
    b.add(b.base(r, n, "specials", Recipe::specials));
  b.b.section();
  // 6. eps: 0 only where the variance is never 0 (uniform, offset), and others.
  b.add(b.base(16, 33, "eps 0", Recipe::uniform, 0.0));
  b.add(b.base(4, 1024, "eps 0", Recipe::uniform, 0.0));
  b.add(b.base(64, 3, "eps 0, offset", Recipe::offset, 0.0));
  b.add(b.base(16, 33, "eps 1e-3", Recipe::uniform, 1e-3));
  b.add(b.base(16, 1025, "eps 1e-6", Recipe::uniform, 1e-6));
  b.b.section();
  // 7. Layouts: weight and bias strided (before broadcast: a kernel ignoring
  // the stride then reads inside the buffer), broadcast (stride 0), offset;
  // x and y transposed, padded, offset; strided statistics.
  for (auto [r, n] : {std::pair<int64_t, int64_t>{37, 45}, {5, 1025}, {33, 3}}) {
    for (int kind = 0; kind < 3; ++kind) {
      Parts p = b.base(r, n, kind == 0 ? "layout weight, bias strided" : kind == 1 ? "layout weight, bias broadcast"
                                                                                   : "layout weight, bias offset");
      const Layout l = kind == 0 ? Layout{false, 2, 0, 0, false} : kind == 1 ? Layout{false, 0, 0, 0, true}
                                                                             : Layout{false, 0, 1, 0, false};
      p.layout[W] = p.layout[B] = l;
      b.add(p);
    }
    for (int which = 0; which < 3; ++which)
      for (int kind = 0; kind < 3; ++kind) {
        Parts p = b.base(r, n, "layout");
        const Layout l = kind == 0 ? rows::transposed() : kind == 1 ? rows::padded(3) : rows::transposed(2, 1);
        if (which != 1) p.layout[X] = l;
        if (which != 0) p.layout[Y] = l;
        p.origin = std::string("layout ") + (which == 0 ? "x" : which == 1 ? "y" : "x, y") +
                   (kind == 0 ? " transposed" : kind == 1 ? " padded" : " transposed padded offset");
        b.add(p);
      }
    if (!rms) {
      Parts p = b.base(r, n, "layout mean, rstd strided, offset");
      p.layout[MEAN] = p.layout[RSTD] = Layout{false, 1, 2, 0, false};
      b.add(p);
    }
  }
  b.b.section();
  // 8. Batches: 3-D x and y, gaps between batches, transposed, a broadcast weight.
  for (auto [bs, r, n] : {std::tuple<int64_t, int64_t, int64_t>{3, 5, 33}, {2, 64, 1024}, {4, 3, 3}, {5, 1, 31}, {2, 17, 1025}}) {
    Parts p = b.batched(bs, r, n, "batch");
    b.add(p);
    p.layout[X].batch_gap = 7, p.layout[Y].batch_gap = 3, p.layout[MEAN].batch_gap = 2, p.layout[RSTD].batch_gap = 1;
    p.origin = "batch, gaps between batches";
    b.add(p);
    p.layout[X].col_major = true, p.layout[W].broadcast = true, p.origin = "batch, gaps, x transposed, weight broadcast";
    b.add(p);
  }
  if (target.backend == BackendKind::cuda) {
    b.b.section();
    // 9. Large cases.
    for (auto [r, n] : {std::pair<int64_t, int64_t>{1024, 1024}, {64, 65536}, {4096, 4096}, {16384, 1000}, {256, 262144}})
      b.add(b.base(r, n, "large"));
    b.b.section();
    // 10. Index and grid limits: rows past 2^20, a row past 2^20, x past 2^31 elements where it fits.
    b.add(b.base((int64_t(1) << 20) + 7, 33, "rows past 2^20"));
    b.add(b.base(3, (int64_t(1) << 20) + 7, "row past 2^20"));
    Parts p = b.base(65537, 32769, "x past 2^31 elements");
    if (huge_case_fits(make_case(p), target)) b.add(p);
  }
  return b.b.interleaved();
}

std::optional<Case> random_case(const Op&, const Spec& spec, bool rms, uint64_t seed, uint64_t index,
                                const GenLimits& lim) {
  rows::RandomDraw d(seed, 0x6e6f726d, index);
  const Shape s = d.shape(lim, int64_t(1) << 20);
  Parts p = plain_parts(spec, rms, s, "random #" + std::to_string(index));
  p.layout[X] = d.layout(s), p.layout[Y] = d.layout(s);
  for (int slot : {W, B}) {
    const uint64_t r = d.next() % 6;
    p.layout[slot] = r == 0 ? Layout{false, 0, 0, 0, true} : r == 1 ? Layout{false, int64_t(1 + d.next() % 4), 0, 0, false}
                     : r == 2 ? Layout{false, 0, int64_t(1 + d.next() % 3), 0, false} : Layout{};
  }
  for (int slot : {MEAN, RSTD})
    if (d.next() % 4 == 0) p.layout[slot] = Layout{false, int64_t(d.next() % 3), int64_t(d.next() % 3), 0, false};
  p.recipe = d.recipe(kRecipes);
  constexpr double kEps[] = {1e-5, 1e-6, 1e-3, 1e-2};
  p.eps = kEps[d.next() % 4];
  p.seed = d.next();
  return fit_requires(make_case(p), spec);
}

}  // namespace assay::norm
