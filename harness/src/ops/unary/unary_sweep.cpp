#include "ops/unary/unary_sweep.h"

#include <algorithm>

namespace assay::unary {
namespace {

constexpr int kNumRecipes = int(std::size(kRecipes));

// Reference and bound in f64 per element of a block.
constexpr double kPerElement = 16.0;

struct Builder {
  const Spec& spec;
  rows::SweepBuilder b;
  Parts base(int64_t rows, int64_t n, std::string origin) const {
    Parts p = plain_parts(spec, Shape{false, 1, rows, n}, std::move(origin));
    p.recipe = kRecipes[b.made() % kNumRecipes];
    return p;
  }
  Parts batched(int64_t bs, int64_t rows, int64_t n, std::string origin) const {
    Parts p = base(rows, n, std::move(origin));
    p.shape = Shape{true, bs, rows, n};
    return p;
  }
  void add(const Parts& p) { b.add(make_case(p)); }
  void section() { b.section(); }
};

}  // namespace

RecipeParams recipe_params(const Case& c, int tensor) {
  RecipeParams p;
  p.recipe = c.recipe;
  if (tensor != X) return p;  // y is never drawn (poisoned)
  p.keep = c.tensors[X].keep;
  switch (c.recipe) {
    case Recipe::ints: p.int_range = 3, p.density = 1.0; break;  // relu exact, small integers elsewhere
    case Recipe::mixed:
      // |x| from 2^-10 to 2^7: past 88.7 exp overflows f32 (11.1 for f16),
      // large negative x cancels in gelu's 1 + erf and underflows exp.
      p.exp_lo = -10, p.exp_hi = 7;
      break;
    case Recipe::specials: p.density = 0.25; break;  // +-0, +-Inf, NaN, subnormals among uniform values
    case Recipe::offset:
      // The band [-4, 4): gelu and gelu_tanh differ most at |x| 2..3
      // (4.7e-4 at 2.70), and at negative x there the gap is many ulps of
      // f16 and bf16 outputs too.
      p.center = 0.0, p.spread = 4.0;
      break;
    default: break;
  }
  return p;
}

double work(const Case& c) { return rows::shape_of(c).elements(); }
double case_bytes(const Case& c) { return rows::case_bytes(c, kPerElement); }
double host_bytes(const Case& c, BackendKind backend) { return rows::host_bytes(c, backend, kPerElement); }
double default_timeout(const Case& c, BackendKind backend) {
  // A naive kernel: one pass with an erf or exp (host ~20 M elements/s, GPU ~1 G/s), plus 5 s.
  return 5.0 + work(c) / (backend == BackendKind::host ? 5e6 : 1e9);
}
bool huge_case_fits(const Case& c, const SweepTarget& target) {
  return target.backend == BackendKind::cuda && case_bytes(c) <= target.max_bytes &&
         host_bytes(c, target.backend) <= target.max_host_bytes;
}

std::optional<Case> fit_requires(const Case& c, const Spec& spec) {
  const Parts p = parts_of(c);
  auto context = [](const Case& x) -> std::unique_ptr<EvalContext> { return std::make_unique<Context>(x); };
  return rows::fit_requires(spec, c, context, [&](const Shape& s, int relax) {
    Parts q = p;
    q.shape = s;
    if (relax == 1) q.x = rows::plain_like(p.x), q.y = rows::plain_like(p.y);
    if (relax == 2) q.x = q.y = Layout{};
    if (relax == 3) q.x = q.y = rows::transposed();
    if (!s.batched) q.x.batch_gap = q.y.batch_gap = 0;
    return make_case(q);
  });
}

std::vector<Case> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target) {
  Builder b{spec, rows::SweepBuilder(seed, [&](const Case& c) { return fit_requires(c, spec); })};
  b.section();
  // 1. Tiny tensors and vector widths: 1..9 elements (float4 / half2 tails),
  // one row and three.
  for (int64_t n = 1; n <= 9; ++n)
    for (int64_t rows : {1, 3}) b.add(b.base(rows, n, "vector width"));
  b.section();
  // 2. Misaligned vector loads: contiguous tensors whose base is 1..3
  // elements off, x, y or both; and rows padded to a stride that is not a
  // multiple of 4.
  for (int64_t n : {4, 7, 8, 33})
    for (int64_t off = 1; off <= 3; ++off)
      for (int which = 0; which < 3; ++which) {
        Parts p = b.base(3, n, "misaligned");
        if (which != 1) p.x = rows::padded(0, off);
        if (which != 0) p.y = rows::padded(0, off);
        p.origin = std::string(which == 0 ? "x" : which == 1 ? "y" : "x, y") + " offset by " + std::to_string(off);
        b.add(p);
      }
  for (int64_t pad : {1, 3}) {
    Parts p = b.base(5, 12, "rows padded by " + std::to_string(pad));
    p.x = p.y = rows::padded(pad);
    b.add(p);
  }
  b.section();
  // 3. Row lengths around warp, block and tile sizes, and past 2^16.
  for (int64_t n : rows::kRowLengths)
    for (int64_t rows : {1, 4}) b.add(b.base(rows, n, "row length"));
  b.add(b.base(2, rows::kPastWord, "row length past 2^16"));
  b.section();
  // 4. Every recipe at a few shapes: the band [-4, 4) (gelu vs gelu_tanh),
  // |x| to 128 (exp overflow, cancellation), specials, ints.
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{16, 33}, {8, 1024}, {64, 257}, {4, 4097}, {128, 512}})
    for (Recipe r : kRecipes) {
      Parts p = b.base(rows, n, "recipe");
      p.recipe = r;
      b.add(p);
    }
  b.section();
  // 5. Layouts: x and y each transposed, padded, offset; both at once.
  for (auto [rows, n] : {std::pair<int64_t, int64_t>{37, 45}, {5, 1025}, {33, 3}})
    for (int which = 0; which < 3; ++which)
      for (int kind = 0; kind < 4; ++kind) {
        Parts p = b.base(rows, n, "layout");
        const Layout l = kind == 0   ? rows::transposed()
                         : kind == 1 ? rows::padded(3)
                         : kind == 2 ? rows::padded(0, 1)
                                     : rows::transposed(2, 1);
        if (which != 1) p.x = l;
        if (which != 0) p.y = l;
        p.origin = std::string("layout ") + (which == 0 ? "x" : which == 1 ? "y" : "x, y") +
                   (kind == 0   ? " transposed"
                    : kind == 1 ? " padded"
                    : kind == 2 ? " offset+1"
                                : " transposed padded offset");
        b.add(p);
      }
  b.section();
  // 6. Batches: 3-D tensors with gaps between batches, transposed inner matrices.
  for (auto [bs, rows, n] :
       {std::tuple<int64_t, int64_t, int64_t>{3, 5, 33}, {4, 3, 3}, {5, 1, 31}, {2, 17, 1025}, {2, 64, 128}}) {
    Parts p = b.batched(bs, rows, n, "batch");
    b.add(p);
    p.x.batch_gap = 7, p.y.batch_gap = 3, p.origin = "batch, gaps between batches";
    b.add(p);
    p.x.col_major = true, p.origin = "batch, gaps, x transposed";
    b.add(p);
  }
  b.section();
  // 7. Row counts, past 65,535 (a grid limit for one block per row).
  for (int64_t rows : {2, 5, 64, 1000}) b.add(b.base(rows, 33, "row count"));
  b.add(b.base(65537, 3, "rows past 65,535"));
  b.add(b.base(70001, 1, "rows past 65,535"));
  b.section();
  // 8. Large: elements past 65535 x 256 first (a grid of 256-thread blocks
  // without a grid-stride loop leaves the last 256 unwritten).
  b.add(b.base(4096, 4097, "elements past 65535 x 256"));
  b.add(b.base(1024, 1024, "large"));
  b.section();
  // 9. Index limits (cuda, where the device holds it): x past 2^31 elements
  // (32-bit offsets overflow), rows past 2^20.
  b.add(b.base((int64_t(1) << 20) + 7, 33, "rows past 2^20"));
  {
    Parts p = b.base(65537, 32769, "x past 2^31 elements");
    if (huge_case_fits(make_case(p), target)) b.add(p);
  }
  return b.b.interleaved();
}

std::optional<Case> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim) {
  rows::RandomDraw d(seed, 0x756e, index);
  Parts p = plain_parts(spec, d.shape(lim, int64_t(1) << 40), "random #" + std::to_string(index));
  p.x = d.layout(p.shape), p.y = d.layout(p.shape);
  p.recipe = d.recipe(kRecipes);
  p.seed = d.next();
  return fit_requires(make_case(p), spec);
}

}  // namespace assay::unary
