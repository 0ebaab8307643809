#include "ops/moe_topk/moe_topk_sweep.h"

#include <algorithm>
#include <cmath>

#include "case/rng.h"

namespace assay::moe_topk {
namespace {

using rows::Layout;

// Expert counts of real models (Mixtral 8, Qwen 64, DeepSeek-V2 160,
// DeepSeek-V3 256) and the warp and block edges around them.
constexpr int64_t kExperts[] = {8, 64, 160, 256, 1, 2, 3, 31, 32, 33, 128, 257, 512};
constexpr int64_t kTopk[] = {1, 2, 6, 8};

// A count the routing takes: a multiple of n_group where there are groups.
int64_t routable_experts(int64_t e, const Settings& s) {
  if (!s.grouped()) return e;
  const int64_t g = s.n_group;
  return std::max<int64_t>(g, (e + g - 1) / g * g);
}
// topk within what the routing can give.
int64_t routable_topk(int64_t k, int64_t experts, const Settings& s) {
  int64_t most = experts;
  if (s.grouped()) most = std::min(most, int64_t(s.topk_group) * (experts / s.n_group));
  return std::clamp<int64_t>(k, 1, std::max<int64_t>(most, 1));
}

double buffer_bytes_of(const Case& c, Role role) {
  double b = 0;
  for (size_t i = 0; i < c.tensors.size(); ++i)
    if ((c.tensors[i].role == Role::input) == (role == Role::input)) b += rows::buffer_bytes(c.geom(int(i)));
  return b;
}

}  // namespace

RecipeParams recipe_params(const Case& c, int tensor) {
  RecipeParams p;
  p.recipe = c.recipe;
  const Positions at = positions(c);
  const Sizes z = sizes_of(c);
  if (tensor == at.bias) {
    // The bias steers the choice: small integers where the logits tie (ties
    // stay ties), uniform reals otherwise.
    p.recipe = c.recipe == Recipe::ints ? Recipe::ints : Recipe::uniform;
    p.int_range = 1, p.density = 0.5;
    return p;
  }
  if (tensor != at.logits) return p;  // outputs are poisoned, never drawn
  p.keep = c.tensors[size_t(at.logits)].keep;
  switch (c.recipe) {
    case Recipe::ints:
      // |x| <= 3 over many experts: exact ties everywhere; one token in 8
      // all zero (every expert ties).
      p.int_range = 3, p.density = 1.0;
      p.row_fill = 1.0 / 8, p.row_value = 0.0;
      break;
    case Recipe::mixed:
      // Magnitudes from 2^-6 to 2^7: logits past 88 overflow an exp taken
      // without the max subtracted.
      p.exp_lo = -6, p.exp_hi = 7;
      break;
    case Recipe::specials:
      // About one special a token (+-0, +-Inf, NaN, subnormals), one token
      // in 16 all -inf, -inf planted at a token's first, middle or last expert.
      p.density = std::min(0.5, 1.0 / double(std::max<int64_t>(z.experts, 1)));
      p.row_fill = 1.0 / 16, p.row_value = -INFINITY;
      p.plant_fill = 0.5, p.plant_value = -INFINITY, p.plant_cols = z.experts;
      break;
    case Recipe::offset:
      // Logits near 1e4, 1e-2 apart: exp(x) overflows without the max, the
      // sigmoid saturates (every score 1: the bias alone decides).
      break;
    case Recipe::uniform: break;
  }
  return p;
}

double work(const Case& c) {
  const Sizes z = sizes_of(c);
  return double(z.tokens) * double(z.experts) * double(z.topk + 1);
}

double case_bytes(const Case& c) {
  // Every tensor live and as handed, the outputs' copies, the guard pages.
  return 2 * (buffer_bytes_of(c, Role::input) + buffer_bytes_of(c, Role::output)) + buffer_bytes_of(c, Role::output) +
         2 * 4096;
}

double host_bytes(const Case& c, BackendKind backend) {
  const double in = buffer_bytes_of(c, Role::input), out = buffer_bytes_of(c, Role::output);
  const Sizes z = sizes_of(c);
  // The judge: the inputs' spans downloaded, the outputs' images, and per
  // slot a reference and a bound for each output.
  double bytes = in + out + 32.0 * double(z.tokens) * double(z.topk) + double(16 << 20);
  if (backend == BackendKind::host) {
    bytes += 2 * (in + out) + out;  // live, as handed, the call before's outputs
    if (case_bytes(c) <= double(1 << 20)) bytes += 15 * (in + out);  // planned: staged sets, captures
  }
  return bytes;
}

double default_timeout(const Case& c, BackendKind backend) {
  // A naive kernel: topk + 1 scans of every token's logits (host ~20 M
  // elements/s, GPU ~1 G/s), plus 5 s.
  return 5.0 + work(c) / (backend == BackendKind::host ? 2e7 : 1e9);
}

bool huge_case_fits(const Case& c, const SweepTarget& target) {
  return target.backend == BackendKind::cuda && case_bytes(c) <= target.max_bytes &&
         host_bytes(c, target.backend) <= target.max_host_bytes;
}

std::optional<Case> fit_requires(const Case& c, const Spec& spec, const Settings& s) {
  const Parts p = parts_of(c);
  auto holds = [&](const Case& x) {
    const Context ctx(x);
    return std::all_of(spec.requires_.begin(), spec.requires_.end(), [&](auto& r) { return r.holds(ctx); });
  };
  auto remake = [&](Sizes z, int relax) -> std::optional<Case> {
    z.experts = routable_experts(z.experts, s);
    z.topk = routable_topk(z.topk, z.experts, s);
    if (!routable(z, s)) return std::nullopt;
    Parts q = p;
    q.sizes = z;
    if (relax >= 1) q.logits = q.weights = q.indices = q.bias_layout = Layout{};
    if (relax == 2) q.logits = rows::transposed();
    return make_case(q);
  };
  std::vector<Sizes> tries{p.sizes};
  for (int64_t mult = 2; mult <= 1024; mult *= 2) {  // rounded up to multiples (lower bounds, alignment)
    auto up = [mult](int64_t v) { return std::max<int64_t>((v + mult - 1) / mult * mult, v == 0 ? 0 : mult); };
    Sizes z = p.sizes;
    z.experts = up(z.experts);
    tries.push_back(z);
    z.tokens = up(z.tokens);
    tries.push_back(z);
    z.topk = up(z.topk);
    tries.push_back(z);
  }
  for (int64_t div = 2; div <= (int64_t(1) << 20); div *= 2) {  // halved (upper limits)
    Sizes z = p.sizes;
    z.tokens = std::max<int64_t>(1, z.tokens / div);
    tries.push_back(z);
    z.experts = std::max<int64_t>(1, z.experts / div), z.topk = std::min(z.topk, z.experts);
    tries.push_back(z);
  }
  for (const Sizes& z : tries)
    for (int relax = 0; relax < 3; ++relax)
      if (auto x = remake(z, relax); x && holds(*x)) return x;
  return std::nullopt;
}

std::vector<Case> sweep(const Spec& spec, const Settings& s, uint64_t seed, const SweepTarget& target) {
  rows::SweepBuilder b(seed, [&](const Case& c) { return fit_requires(c, spec, s); });
  const bool cuda = target.backend == BackendKind::cuda;
  size_t turn = 0;
  auto parts = [&](int64_t tokens, int64_t experts, int64_t topk, const char* origin) {
    Sizes z{tokens, routable_experts(experts, s), 1};
    z.topk = routable_topk(topk, z.experts, s);
    Parts p = plain_parts(spec, s, z, origin);
    p.recipe = kRecipes[turn++ % std::size(kRecipes)];
    return p;
  };
  auto with = [](Parts p, Recipe r) {
    p.recipe = r;
    return p;
  };
  auto add = [&](const Parts& p) { b.add(make_case(p)); };
  // 1. Expert counts of real models and the warp edges, each topk, a few
  //    tokens, the recipes in turn; topk = experts (every expert taken).
  for (int64_t e : kExperts) {
    for (int64_t k : kTopk)
      if (k <= e) add(parts(4, e, k, "experts, topk"));
    add(parts(3, e, e, "topk = experts"));
  }
  b.section();
  // 2. Token counts: none, one, a few, many, past 65,535 (a grid limit).
  for (int64_t t : {0, 1, 2, 5, 33, 1000}) add(parts(t, 64, 6, "tokens"));
  add(parts(65537, 8, 2, "tokens past 65,535"));
  add(parts(70001, 64, 8, "tokens past 65,535"));
  b.section();
  // 3. Every recipe at telling shapes.
  for (auto [t, e, k] : {std::tuple<int64_t, int64_t, int64_t>{16, 8, 2}, {8, 64, 6}, {32, 256, 8}, {16, 160, 6},
                         {64, 33, 3}})
    for (Recipe r : kRecipes) add(with(parts(t, e, k, "recipe"), r));
  b.section();
  // 4. Ties (small integers, all-zero tokens), huge near-equal logits, masked experts.
  for (auto [t, e, k] : {std::tuple<int64_t, int64_t, int64_t>{64, 8, 2}, {64, 64, 8}, {32, 256, 8}, {64, 3, 2},
                         {16, 160, 6}}) {
    add(with(parts(t, e, k, "ties"), Recipe::ints));
    add(with(parts(t, e, k, "huge near-equal logits"), Recipe::offset));
    add(with(parts(t, e, k, "-inf, NaN, +-0, subnormals"), Recipe::specials));
  }
  b.section();
  // 5. Layouts: logits transposed (experts strided), padded, offset; the
  //    outputs padded and offset; bias spaced and offset; all at once.
  for (auto [t, e, k] : {std::tuple<int64_t, int64_t, int64_t>{37, 64, 6}, {5, 256, 8}, {33, 8, 2}}) {
    for (int kind = 0; kind < 4; ++kind) {
      Parts p = parts(t, e, k, "layout logits");
      p.logits = kind == 0 ? rows::transposed() : kind == 1 ? rows::padded(3) : kind == 2 ? rows::padded(0, 1)
                                                                                          : rows::transposed(2, 1);
      p.origin = kind == 0 ? "layout logits transposed" : kind == 1 ? "layout logits padded"
                                                      : kind == 2 ? "layout logits offset+1"
                                                                  : "layout logits transposed padded offset";
      add(p);
    }
    Parts p = parts(t, e, k, "layout outputs padded");
    p.weights = rows::padded(2), p.indices = rows::padded(3);
    add(p);
    p.weights = rows::padded(0, 3), p.indices = rows::padded(1, 1), p.origin = "layout outputs offset";
    add(p);
    if (s.bias) {
      Parts q = parts(t, e, k, "layout bias spaced, offset");
      q.bias_layout = rows::padded(2, 1);
      add(q);
    }
    p.logits = rows::transposed(1, 2), p.bias_layout = rows::padded(1, 3), p.origin = "layout all";
    add(p);
  }
  b.section();
  // 6. Larger cases; on the host only what a plain loop does in a blink.
  add(parts(1024, 256, 8, "large"));
  if (cuda) {
    for (auto [t, e, k] : {std::tuple<int64_t, int64_t, int64_t>{16384, 256, 8}, {65536 + 33, 160, 6},
                           {(int64_t(1) << 20) + 7, 8, 2}})
      add(parts(t, e, k, "large"));
  }
  return b.interleaved();
}

std::optional<Case> random_case(const Spec& spec, const Settings& s, uint64_t seed, uint64_t index,
                                const GenLimits& lim) {
  rows::RandomDraw d(seed, 0x6d6f65, index);
  Sizes z;
  z.tokens = d.dim(lim);
  z.experts = d.next() % 2 ? kExperts[d.next() % std::size(kExperts)] : std::max<int64_t>(1, d.dim(lim) % 513);
  z.experts = routable_experts(z.experts, s);
  z.topk = routable_topk(d.next() % 4 ? kTopk[d.next() % std::size(kTopk)] : int64_t(1 + d.next() % 16), z.experts, s);
  while (double(z.tokens) * double(z.experts) > lim.max_random_work) z.tokens /= 2;
  Parts p = plain_parts(spec, s, z, "random #" + std::to_string(index));
  const rows::Shape in{false, 1, z.tokens, z.experts}, out{false, 1, z.tokens, z.topk};
  p.logits = d.layout(in), p.weights = d.layout(out), p.indices = d.layout(out);
  p.weights.col_major = p.indices.col_major = false;
  p.logits.batch_gap = p.weights.batch_gap = p.indices.batch_gap = 0;
  if (s.bias && d.next() % 4 == 0) p.bias_layout = rows::padded(int64_t(d.next() % 4), int64_t(d.next() % 3));
  p.recipe = d.recipe(kRecipes);
  p.seed = d.next();
  return fit_requires(make_case(p), spec, s);
}

}  // namespace assay::moe_topk
