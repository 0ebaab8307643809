#include "ops/fp8_gemm/fp8_gemm_sweep.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "ops/gemm/gemm_operands.h"
#include "ops/rows/rows.h"

namespace assay::fp8_gemm {
namespace {

using rows::role_bytes;

// k around the scale block (128) and the MMA's k (32), and lengths that are
// a multiple of no block.
constexpr int64_t kDepths[] = {1, 2, 31, 64, 100, 127, 128, 129, 255, 256, 257, 300, 384, 513};

}  // namespace

RecipeParams recipe_params(const Case& c, int tensor) {
  RecipeParams p;
  p.recipe = c.recipe;
  if (tensor == D) return p;  // the output is poisoned, never drawn (keep: Op::params_for)
  const Sizes z = sizes_of(c);
  if (tensor == A || tensor == B) {
    const DType t = c.tensors[size_t(tensor)].dtype;
    const bool e4m3 = t == DType::e4m3;
    switch (c.recipe) {
      case Recipe::ints: p.int_range = 3, p.density = 1.0; break;  // exact products and sums
      case Recipe::mixed:
        // The format's whole range, its subnormals included, and its largest
        // finite value (448, 57344) planted in a quarter of the rows: a
        // decoder that takes the top exponent for Inf or NaN shows.
        p.exp_lo = e4m3 ? -8 : -15, p.exp_hi = e4m3 ? 8 : 15;
        p.plant_fill = 0.25, p.plant_value = max_finite(t), p.plant_cols = z.k;
        break;
      case Recipe::specials:
        // About one ±0, NaN, Inf (e5m2; e4m3fn has none: NaN) or subnormal
        // in every 4 rows.
        p.density = 1.0 / (4.0 * double(std::max<int64_t>(z.k, 1)));
        break;
      case Recipe::offset:
        // Positive values in [1, 2): no cancellation, so an accumulator's
        // rounding adds up along k (a 14-bit one never promoted drifts).
        p.center = 1.5, p.spread = 0.5;
        break;
      case Recipe::uniform: break;
    }
    return p;
  }
  // Scales.
  switch (c.recipe) {
    case Recipe::ints: break;  // small integers: exact scale products
    case Recipe::mixed: p.exp_lo = -12, p.exp_hi = 4; break;
    case Recipe::offset: p.center = 0.75, p.spread = 0.25; break;  // positive, as amax / 448 is
    case Recipe::specials:
      // Zero scales (whole rows of a_scale), huge ones (2^100, in a_scale
      // only: two huge scales overflow f32 where FP64 does not) and
      // subnormal ones (below 2^-126, in b_scale); the rest uniform.
      p.recipe = Recipe::uniform;
      if (tensor == AS) {
        p.row_fill = 0.125, p.row_value = 0.0;
        p.plant_fill = 0.25, p.plant_value = 0x1p100, p.plant_cols = blocks(z.k);
      } else {
        p.plant_fill = 0.5, p.plant_value = 0x1.8p-130, p.plant_cols = blocks(z.k);
      }
      break;
    case Recipe::uniform: break;
  }
  return p;
}

double work(const Case& c) {
  const Sizes z = sizes_of(c);
  return double(z.m) * double(z.n) * double(z.k);
}

double case_bytes(const Case& c) {
  // Every tensor live and as handed, the output's copy, the device
  // reference's widened operands (value and |value|), A'B' and |A'||B'|, its
  // block of three arrays, the guard pages.
  const Sizes z = sizes_of(c);
  const double mn = double(z.m) * double(z.n);
  return 2 * (role_bytes(c, Role::input) + role_bytes(c, Role::output)) + role_bytes(c, Role::output) +
         16.0 * (double(z.m) * double(z.k) + double(z.k) * double(z.n) + mn) +
         24.0 * std::min(mn, double(reference::kReferenceBlockElements)) + 2 * 4096;
}

double host_bytes(const Case& c, BackendKind backend) {
  const double in = role_bytes(c, Role::input), out = role_bytes(c, Role::output);
  const Sizes z = sizes_of(c);
  const double block = double(reference::reference_block_rows(z.m, z.n, z.k));
  // d's image, the reference's block (ref, bound, terms, our bound), the rows' maxima.
  double bytes = out + 32.0 * block * double(z.n) + 8.0 * double(2 * z.m + 2 * z.n) + double(16 << 20);
  if (backend == BackendKind::host) {
    bytes += 2 * (in + out) + out;                                            // live, as handed, the call before's
    bytes += 16.0 * double(z.k) * double(z.n) + 16.0 * block * double(z.k);  // Eigen's widened B, A's block
    if (case_bytes(c) <= double(1 << 20)) bytes += 15 * (in + out);         // planned: staged sets, captures
  }
  return bytes;
}

double default_timeout(const Case& c, BackendKind backend) {
  // A naive kernel: host ~200 M multiply-adds/s, GPU ~20 G/s, plus 5 s.
  return 5.0 + work(c) / (backend == BackendKind::host ? 2e8 : 2e10);
}

bool huge_case_fits(const Case& c, const SweepTarget& target) {
  return target.backend == BackendKind::cuda && case_bytes(c) <= target.max_bytes &&
         host_bytes(c, target.backend) <= target.max_host_bytes;
}

std::optional<Case> fit_requires(const Case& c, const Spec& spec) {
  const Parts p = parts_of(c);
  auto holds = [&](const Case& x) {
    const Context ctx(x);
    return std::all_of(spec.requires_.begin(), spec.requires_.end(), [&](auto& r) { return r.holds(ctx); });
  };
  auto remake = [&](Sizes z, bool plain) {
    Parts q = p;
    q.sizes = z;
    if (plain) q.a = q.a_scale = q.b = q.b_scale = q.d = Layout{};
    return make_case(q);
  };
  const Sizes z0 = p.sizes;
  std::vector<Sizes> tries{z0};
  auto up = [](int64_t v, int64_t mult) { return std::max<int64_t>((v + mult - 1) / mult * mult, mult); };
  for (int64_t mult = 2; mult <= 256; mult *= 2) {  // rounded up to multiples (alignment, tiles)
    tries.push_back({z0.m, z0.n, up(z0.k, mult)});
    tries.push_back({z0.m, up(z0.n, mult), z0.k});
    tries.push_back({z0.m, up(z0.n, mult), up(z0.k, mult)});
    tries.push_back({up(z0.m, mult), up(z0.n, mult), up(z0.k, mult)});
  }
  for (int64_t div = 2; div <= 4096; div *= 2) {  // halved (upper limits)
    tries.push_back({std::max<int64_t>(1, z0.m / div), z0.n, z0.k});
    tries.push_back({std::max<int64_t>(1, z0.m / div), std::max<int64_t>(1, z0.n / div), z0.k});
    tries.push_back({std::max<int64_t>(1, z0.m / div), std::max<int64_t>(1, z0.n / div),
                     std::max<int64_t>(1, z0.k / div)});
  }
  for (const Sizes& z : tries)
    for (bool plain : {false, true})
      if (Case x = remake(z, plain); holds(x)) return x;
  return std::nullopt;
}

std::vector<Case> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target) {
  rows::SweepBuilder b(seed, [&](const Case& c) { return fit_requires(c, spec); });
  const bool cuda = target.backend == BackendKind::cuda;
  size_t turn = 0;
  auto parts = [&](int64_t m, int64_t n, int64_t k, const char* origin) {
    Parts p = plain_parts(spec, Sizes{m, n, k}, origin);
    p.recipe = kRecipes[turn++ % std::size(kRecipes)];
    return p;
  };
  auto add = [&](const Parts& p) { b.add(make_case(p)); };
  // 1. k at and around the scale block (and below, above, twice): a scale
  //    read for the wrong k-block, a tail block skipped; uniform values
  //    first (the telling bugs need no extremes).
  for (int64_t k : kDepths) {
    Parts p = parts(33, 65, k, "k around the scale block");
    p.recipe = Recipe::uniform;
    add(p);
  }
  b.section();
  // 2. m and n tails: n past a 128-row block of b_scale, single rows and columns.
  for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 1}, {1, 129}, {129, 1}, {129, 127}, {127, 129}, {200, 300},
                      {64, 257}, {16, 384}, {3, 640}}) {
    Parts p = parts(m, n, 384, "m, n tails");
    if (turn % 2) p.recipe = Recipe::uniform;
    add(p);
  }
  b.section();
  // 3. Every recipe at telling shapes: the format's range and largest value,
  //    NaN and Inf, zero, subnormal and huge scales, exact integers, positive data.
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{64, 192, 384}, {129, 257, 300}, {1, 128, 1024},
                         {37, 130, 129}})
    for (Recipe r : kRecipes) {
      Parts p = parts(m, n, k, "recipe");
      p.recipe = r;
      add(p);
    }
  b.section();
  // 4. Long k with positive data: an accumulator that is never promoted
  //    drifts by its rounding times k.
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{8, 128, 4096}, {4, 64, 8192}, {2, 130, 16384},
                         {16, 130, 2048}}) {
    Parts p = parts(m, n, k, "long k, positive data");
    p.recipe = Recipe::offset;
    add(p);
  }
  b.section();
  // 5. Layouts: padded rows of a, b and d, offsets, the scales MN-major
  //    (a_scale as DeepGEMM's TMA reads it) and padded; all at once.
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{65, 130, 300}, {128, 256, 512}}) {
    Parts p = parts(m, n, k, "layout padded rows");
    p.a = rows::padded(16), p.b = rows::padded(32), p.d = rows::padded(3);
    add(p);
    p = parts(m, n, k, "layout a_scale MN-major");
    p.a_scale = rows::transposed(4);
    add(p);
    p = parts(m, n, k, "layout scales MN-major, padded, offsets");
    p.a_scale = rows::transposed(0, 1), p.b_scale = rows::transposed(1, 2), p.a = rows::padded(0, 5);
    add(p);
    p = parts(m, n, k, "layout all");
    p.a = rows::padded(8, 3), p.a_scale = rows::transposed(4, 1), p.b = rows::padded(16, 7);
    p.b_scale = rows::padded(2, 1), p.d = rows::padded(5, 2);
    add(p);
  }
  b.section();
  // 6. Larger cases; on the host only what a plain loop does in a blink.
  add(parts(128, 256, 1024, "large"));
  if (cuda) {
    add(parts(512, 2112, 7168, "large (DeepSeek-V3's shapes)"));
    add(parts(2048, 1536, 1024, "large"));
    add(parts(4096, 7168, 128, "large"));
    Parts p = parts(129, 4096, 7168, "large, long k, positive data");
    p.recipe = Recipe::offset;
    add(p);
  }
  return b.interleaved();
}

std::optional<Case> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim) {
  rows::RandomDraw d(seed, 0x667038, index);
  Sizes z;
  z.m = std::max<int64_t>(1, d.dim(lim)), z.n = std::max<int64_t>(1, d.dim(lim));
  z.k = d.next() % 2 ? kDepths[d.next() % std::size(kDepths)] : std::max<int64_t>(1, d.dim(lim));
  if (d.next() % 4 == 0) z.k *= 8;
  while (double(z.m) * double(z.n) * double(z.k) > lim.max_random_work && (z.m > 1 || z.n > 1 || z.k > 1)) {
    if (z.k >= z.m && z.k >= z.n) z.k = std::max<int64_t>(1, z.k / 2);
    else if (z.m >= z.n) z.m = std::max<int64_t>(1, z.m / 2);
    else z.n = std::max<int64_t>(1, z.n / 2);
  }
  Parts p = plain_parts(spec, z, "random #" + std::to_string(index));
  auto layout = [&](bool scale) {
    Layout l;
    if (d.next() % 2) return l;
    l.col_major = scale && d.next() % 2;
    l.pad = int64_t(d.next() % 4) * int64_t(d.next() % 2) * (scale ? 1 : 8);
    l.offset = int64_t(d.next() % 3);
    return l;
  };
  p.a = layout(false), p.a_scale = layout(true), p.b = layout(false), p.b_scale = layout(true), p.d = layout(false);
  p.recipe = d.recipe(kRecipes);
  p.seed = d.next();
  return fit_requires(make_case(p), spec);
}

}  // namespace assay::fp8_gemm
