#include "ops/attention/attention_sweep.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "ops/attention/attention_reference.h"
#include "ops/rows/rows.h"

namespace assay::attention {
namespace {

using rows::role_bytes;

// Sequence lengths around the tiles kernels use (64, 128) and lengths that
// are a multiple of no block.
constexpr int64_t kSeqs[] = {1, 2, 37, 63, 64, 65, 100, 127, 128, 129, 200, 257};
constexpr int64_t kHeadDims[] = {16, 32, 64, 80, 96, 128, 192, 256};

}  // namespace

RecipeParams recipe_params(const Case& c, int tensor) {
  RecipeParams p;
  p.recipe = c.recipe;
  if (tensor > V) return p;  // outputs are poisoned, never drawn
  p.keep = c.tensors[size_t(tensor)].keep;
  const Sizes z = sizes_of(c);
  const bool logits = tensor == Q || tensor == K;
  switch (c.recipe) {
    case Recipe::ints:
      // Small integers: exact logits (up to the scale), ties between keys.
      p.int_range = logits ? 2 : 3, p.density = 1.0;
      break;
    case Recipe::mixed:
      // q and k up to 32 in magnitude: logits in the hundreds, past 88
      // where exp overflows without the max, and a max that keeps rising
      // along the keys; v plain.
      if (logits) p.exp_lo = -2, p.exp_hi = 5;
      else p.recipe = Recipe::uniform;
      break;
    case Recipe::specials:
      // About one ±0, ±inf, NaN or subnormal in every 4 rows of q and k,
      // one query row in 16 all -inf; v finite (a masked key's value is
      // multiplied by P = 0 in every published kernel, torch's included).
      if (logits) {
        p.density = 1.0 / (4.0 * double(std::max<int64_t>(z.d, 1)));
        if (tensor == Q) p.row_fill = 1.0 / 16, p.row_value = -INFINITY;
      } else {
        p.recipe = Recipe::uniform;
      }
      break;
    case Recipe::offset:
      // q and k in [2, 4]: every logit large, positive and close to the
      // others (9 sqrt(d) at the usual scale): exp overflows without the
      // max; v plain.
      if (logits) p.center = 3.0, p.spread = 1.0;
      else p.recipe = Recipe::uniform;
      break;
    case Recipe::uniform: break;
  }
  return p;
}

double visible_pairs(const Sizes& z, bool causal) {
  if (!causal) return double(z.sq) * double(z.sk);
  const int64_t off = z.sk - z.sq, first_row = std::max<int64_t>(0, -off);
  const double rows = double(z.sq - first_row);
  if (rows <= 0) return 0;
  return rows * (double(first_row + off + 1) + double(z.sk)) / 2.0;  // 1.. or (first).. up to sk keys
}

double work(const Case& c) {
  const Sizes z = sizes_of(c);
  return double(z.b) * double(z.hq) * visible_pairs(z, c.scalars[1].value != 0) * double(z.d + z.dv);
}

double case_bytes(const Case& c) {
  // Every tensor live and as handed, the outputs' copies, the reference's
  // block (o's reference, bound and class; lse's), the guard pages.
  const Sizes z = sizes_of(c);
  const double block = block_rows(z);
  return 2 * (role_bytes(c, Role::input) + role_bytes(c, Role::output)) + role_bytes(c, Role::output) +
         24.0 * block * double(z.dv + 1) + 2 * 4096;
}

double host_bytes(const Case& c, BackendKind backend) {
  const double in = role_bytes(c, Role::input), out = role_bytes(c, Role::output);
  const Sizes z = sizes_of(c);
  // The outputs' images, the reference's block arrays and the row scratch.
  double bytes = out + 24.0 * block_rows(z) * double(z.dv + 1) + 24.0 * double(z.sk) + double(16 << 20);
  if (backend == BackendKind::host) {
    bytes += 2 * (in + out) + out;  // live, as handed, the call before's outputs
    if (case_bytes(c) <= double(1 << 20)) bytes += 15 * (in + out);  // planned: staged sets, captures
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
  // relax 1: layouts plain; 2: and the usual scale; 3: and causal flipped.
  auto remake = [&](Sizes z, int relax) -> std::optional<Case> {
    if (!valid(z)) return std::nullopt;
    Parts q = p;
    q.sizes = z;
    if (z.d != p.sizes.d && usual_scale(p.scale, p.sizes.d))
      q.scale = 1.0 / std::sqrt(double(z.d));  // the usual scale stays the usual one
    if (relax >= 1) q.q = q.k = q.v = q.o = q.lse_layout = Layout{};
    if (relax >= 2) q.scale = 1.0 / std::sqrt(double(z.d));
    if (relax >= 3) q.causal = !q.causal;
    return make_case(q);
  };
  const Sizes z0 = p.sizes;
  std::vector<Sizes> tries{z0};
  for (int64_t mult = 2; mult <= 256; mult *= 2) {  // rounded up to multiples (lower bounds, alignment)
    auto up = [mult](int64_t v) { return std::max<int64_t>((v + mult - 1) / mult * mult, mult); };
    Sizes z = z0;
    z.d = std::min(up(z.d), kMaxHeadDim), z.dv = std::min(up(z.dv), kMaxHeadDim);
    tries.push_back(z);
    Sizes w = z0;
    w.sk = up(w.sk);
    tries.push_back(w);
    w.sq = up(w.sq);
    tries.push_back(w);
    z.sk = w.sk, z.sq = w.sq;
    tries.push_back(z);
  }
  for (int64_t dim : {64, 128, 32, 256, 16}) {  // kernels built for one head dim
    Sizes z = z0;
    z.d = z.dv = dim;
    tries.push_back(z);
  }
  {
    Sizes z = z0;  // one key/value head per query head, or one for all
    z.hk = z.hq;
    tries.push_back(z);
    z.hk = 1;
    tries.push_back(z);
    z.hq = z.hk = 1;
    tries.push_back(z);
    z = z0, z.sq = z.sk;  // square
    tries.push_back(z);
  }
  for (int64_t div = 2; div <= 4096; div *= 2) {  // halved (upper limits)
    Sizes z = z0;
    z.sq = std::max<int64_t>(1, z.sq / div), z.sk = std::max<int64_t>(1, z.sk / div);
    tries.push_back(z);
    z.b = std::max<int64_t>(1, z.b / div);
    tries.push_back(z);
    z.d = std::max<int64_t>(1, z.d / div), z.dv = std::max<int64_t>(1, z.dv / div);
    tries.push_back(z);
  }
  for (const Sizes& z : tries)
    for (int relax = 0; relax < 4; ++relax)
      if (auto x = remake(z, relax); x && holds(*x)) return x;
  return std::nullopt;
}

std::vector<Case> sweep(const Spec& spec, const Settings& s, uint64_t seed, const SweepTarget& target) {
  rows::SweepBuilder b(seed, [&](const Case& c) { return fit_requires(c, spec); });
  const bool cuda = target.backend == BackendKind::cuda;
  size_t turn = 0;
  auto parts = [&](Sizes z, bool causal, const char* origin) {
    Parts p = plain_parts(spec, s, z, origin);
    p.causal = causal;
    p.recipe = kRecipes[turn++ % std::size(kRecipes)];
    return p;
  };
  auto sz = [](int64_t b, int64_t hq, int64_t hk, int64_t sq, int64_t sk, int64_t d, int64_t dv) {
    return Sizes{b, hq, hk, sq, sk, d, dv};
  };
  auto add = [&](const Parts& p) { b.add(make_case(p)); };
  // 1. Sequence lengths at and around the tiles, square and not, causal
  //    and not; uniform values first (the telling bugs need no extremes).
  for (int64_t n : kSeqs)
    for (bool causal : {false, true}) {
      Parts p = parts(sz(1, 2, 1, n, n, 64, 64), causal, "sq = sk");
      p.recipe = Recipe::uniform;
      add(p);
    }
  b.section();
  // 2. sq != sk: decode rows (sq = 1), fewer queries than keys, more
  //    queries than keys (rows without a visible key under causal).
  for (auto [sq, sk] : {std::pair<int64_t, int64_t>{1, 129}, {129, 65}, {16, 300}, {100, 37}, {65, 129}, {300, 16},
                        {37, 100}, {2, 1}, {1, 64}, {64, 1}})
    for (bool causal : {true, false}) {
      Parts p = parts(sz(1, 2, 2, sq, sk, 64, 64), causal, causal ? "causal, sq != sk" : "sq != sk");
      if (turn % 2) p.recipe = Recipe::uniform;
      add(p);
    }
  b.section();
  // 3. Grouped-query heads: hq / hk of 1, 2 and 8, batches.
  for (auto [bb, hq, hk] : {std::tuple<int64_t, int64_t, int64_t>{2, 4, 4}, {2, 4, 2}, {1, 8, 1}, {1, 16, 2},
                            {3, 2, 1}})
    for (bool causal : {false, true}) add(parts(sz(bb, hq, hk, 65, 65, 32, 32), causal, "heads"));
  b.section();
  // 4. Head dims, d != dv (DeepSeek's 192 / 128), odd dims.
  for (int64_t d : kHeadDims) add(parts(sz(1, 2, 1, 33, 70, d, d), d % 64 == 0, "head dim"));
  for (auto [d, dv] : {std::pair<int64_t, int64_t>{192, 128}, {128, 64}, {64, 128}, {1, 1}, {3, 5}, {256, 16}})
    add(parts(sz(1, 2, 1, 33, 70, d, dv), true, "d != dv"));
  b.section();
  // 5. Scales other than 1/sqrt(d) (a kernel that hard-codes it fails).
  for (double scale : {1.0, 0.05, 0.3}) {
    Parts p = parts(sz(1, 2, 1, 40, 90, 64, 64), false, "scale");
    p.scale = scale, p.recipe = Recipe::uniform;
    add(p);
    p.causal = true, p.recipe = Recipe::mixed;
    add(p);
  }
  b.section();
  // 6. Every recipe at telling shapes: large logits, exact ones, -inf and NaN.
  for (auto [sq, sk, causal] : {std::tuple<int64_t, int64_t, bool>{64, 200, false}, {129, 129, true},
                                {100, 37, true}, {1, 300, false}})
    for (Recipe r : kRecipes) {
      Parts p = parts(sz(1, 4, 2, sq, sk, 64, 64), causal, "recipe");
      p.recipe = r;
      add(p);
    }
  b.section();
  // 7. Layouts: bshd (the callers' [b, s, h, d]), padded rows, batch gaps,
  //    offsets; lse strided; all at once.
  for (auto [sq, sk] : {std::pair<int64_t, int64_t>{65, 65}, {37, 129}}) {
    const Sizes z = sz(2, 4, 2, sq, sk, 32, 32);
    Parts p = parts(z, true, "layout bshd");
    p.q = p.k = p.v = p.o = Layout{true, 0, 0, 0};
    add(p);
    p = parts(z, false, "layout padded rows");
    p.q = Layout{false, 3, 0, 0}, p.k = Layout{false, 8, 0, 0}, p.v = Layout{false, 1, 0, 0}, p.o = Layout{false, 2, 0, 0};
    add(p);
    p = parts(z, true, "layout batch gaps, offsets");
    p.q = Layout{false, 0, 17, 1}, p.k = Layout{true, 0, 5, 3}, p.v = Layout{false, 0, 9, 2}, p.o = Layout{true, 0, 7, 1};
    p.lse_layout = Layout{false, 1, 3, 1};
    add(p);
    p = parts(z, true, "layout all");
    p.q = Layout{true, 5, 11, 1}, p.k = Layout{true, 2, 3, 1}, p.v = Layout{false, 4, 1, 3}, p.o = Layout{true, 1, 2, 2};
    p.lse_layout = Layout{true, 2, 1, 1};
    add(p);
  }
  b.section();
  // 8. Larger cases; on the host only what a plain loop does in a blink.
  add(parts(sz(1, 4, 1, 300, 300, 64, 64), true, "large"));
  if (cuda) {
    add(parts(sz(2, 16, 16, 1024, 1024, 128, 128), true, "large"));
    add(parts(sz(1, 32, 8, 1, 8192, 128, 128), false, "large decode"));
    add(parts(sz(1, 8, 2, 2048, 2048, 64, 64), false, "large"));
    add(parts(sz(4, 8, 1, 777, 1500, 192, 128), true, "large"));
  }
  return b.interleaved();
}

std::optional<Case> random_case(const Spec& spec, const Settings& s, uint64_t seed, uint64_t index,
                                const GenLimits& lim) {
  rows::RandomDraw d(seed, 0x617474, index);
  Sizes z;
  z.b = 1 + int64_t(d.next() % 3);
  z.hk = 1 + int64_t(d.next() % 3);
  static constexpr int64_t kRatios[] = {1, 1, 2, 4, 8};
  z.hq = z.hk * kRatios[d.next() % std::size(kRatios)];
  const int64_t max_seq = std::max<int64_t>(1, std::min<int64_t>(lim.max_random_dim, 2048));
  z.sq = std::min(max_seq, d.next() % 3 ? kSeqs[d.next() % std::size(kSeqs)] : std::max<int64_t>(1, d.dim(lim)));
  z.sk = std::min(max_seq, d.next() % 3 ? kSeqs[d.next() % std::size(kSeqs)] : std::max<int64_t>(1, d.dim(lim)));
  z.d = d.next() % 4 ? kHeadDims[d.next() % std::size(kHeadDims)] : int64_t(1 + d.next() % kMaxHeadDim);
  z.dv = d.next() % 3 ? z.d : kHeadDims[d.next() % std::size(kHeadDims)];
  const bool causal = d.next() % 2;
  auto work_of = [&] { return double(z.b) * double(z.hq) * visible_pairs(z, causal) * double(z.d + z.dv); };
  while (work_of() > lim.max_random_work && (z.sq > 1 || z.sk > 1 || z.b > 1)) {
    if (z.b > 1) z.b = 1;
    else if (z.sk >= z.sq) z.sk = std::max<int64_t>(1, z.sk / 2);
    else z.sq = std::max<int64_t>(1, z.sq / 2);
  }
  Parts p = plain_parts(spec, s, z, "random #" + std::to_string(index));
  p.causal = causal;
  if (d.next() % 4 == 0) p.scale = (d.next() % 2 ? 1.0 : 0.5) / std::sqrt(double(z.d)) * (1 + d.next() % 3);
  auto layout = [&] {
    Layout l;
    if (d.next() % 2) return l;
    l.bshd = d.next() % 2, l.pad = int64_t(d.next() % 4) * int64_t(d.next() % 2);
    l.batch_gap = d.next() % 3 == 0 ? int64_t(d.next() % 16) : 0, l.offset = int64_t(d.next() % 3);
    return l;
  };
  p.q = layout(), p.k = layout(), p.v = layout(), p.o = layout(), p.lse_layout = layout();
  p.recipe = d.recipe(kRecipes);
  p.seed = d.next();
  return fit_requires(make_case(p), spec);
}

}  // namespace assay::attention
