#include "ops/custom/custom_cases.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "case/rng.h"

namespace assay::custom {
namespace {

constexpr Recipe kRecipes[] = {Recipe::ints, Recipe::uniform, Recipe::mixed, Recipe::specials};
// Per size, in order: distinct middling values, so that a kernel mixing up
// two sizes reads the wrong elements.
constexpr int64_t kMedium[] = {37, 45, 29, 19, 23, 31};
// The host runs the candidate on one core: its sweep keeps each case below
// this many elements (all tensors together); the cuda sweep goes to the
// sizes' maxima where the memory holds them.
constexpr double kHostSweepElements = double(1 << 22);

int64_t clamp_to(const SizeDef& s, int64_t v) { return std::clamp(v, s.min, s.max); }

// Boundary values of one size: its ends, the small sizes, around 32, 256 and
// 1024, clipped to the range.
std::vector<int64_t> boundary_values(const SizeDef& s) {
  std::set<int64_t> v;
  for (int64_t x : {s.min, s.min + 1, int64_t(1), int64_t(2), int64_t(3), int64_t(31), int64_t(32), int64_t(33),
                    int64_t(255), int64_t(256), int64_t(257), int64_t(1023), int64_t(1024), int64_t(1025), s.max})
    v.insert(clamp_to(s, x));
  return {v.begin(), v.end()};
}

int64_t small_value(const SizeDef& s) { return clamp_to(s, 3); }

std::vector<LayoutParts> plain(const Def& def) { return std::vector<LayoutParts>(def.tensors.size()); }

double buffer_bytes(const TensorGeom& g) { return double(g.span()) * dtype_bytes(g.dtype) + 2.0 * 1024 + 8; }

bool fits_target(const Def& def, const Case& c, const SweepTarget& target) {
  if (target.backend == BackendKind::host && elements(c) > kHostSweepElements) return false;
  return case_bytes(c) <= target.max_bytes && host_bytes(def, c, target.backend) <= target.max_host_bytes;
}

// Halves the largest size (above its minimum) until the case is at most
// `max_elements` elements and `max_work`; false if it cannot get there.
bool shrink_to(const Def& def, std::vector<int64_t>& sizes, double max_elements, int keep = -1) {
  for (int guard = 0; guard < 256; ++guard) {
    auto c = make_case(def, sizes, plain(def), {}, Recipe::uniform, 0, "");
    if (c && elements(*c) <= max_elements) return true;
    int big = -1;
    for (int pass = 0; pass < 2 && big < 0; ++pass)
      for (size_t i = 0; i < sizes.size(); ++i)
        if ((pass == 1 || int(i) != keep) && sizes[i] > def.sizes[i].min && (big < 0 || sizes[i] > sizes[size_t(big)]))
          big = int(i);
    if (big < 0) return false;
    sizes[size_t(big)] = std::max(def.sizes[size_t(big)].min, sizes[size_t(big)] / 2);
  }
  return false;
}

struct SweepBuilder {
  const Def& def;
  const Spec& spec;
  uint64_t seed;
  const SweepTarget& target;
  std::vector<std::vector<Case>> sections;
  std::set<std::string> seen;
  size_t made = 0;

  void section() { sections.emplace_back(); }
  std::vector<Case> interleaved() const {
    std::vector<Case> out;
    for (size_t i = 0; out.size() < made; ++i)
      for (auto& s : sections)
        if (i < s.size()) out.push_back(s[i]);
    return out;
  }
  std::vector<double> scalars() const {
    std::vector<double> v;
    for (size_t j = 0; j < def.scalars.size(); ++j) {
      const auto cand = def.scalars[j].candidates();
      v.push_back(cand[(made / 4 + j) % cand.size()]);
    }
    return v;
  }
  void add(std::vector<int64_t> sizes, std::vector<LayoutParts> layouts, std::string origin, int keep_size = -1,
           std::optional<Recipe> recipe = {}, std::optional<std::vector<double>> scalar_values = {}) {
    sizes = def.clamped(sizes);
    auto c = make_case(def, sizes, layouts, scalar_values ? *scalar_values : scalars(), recipe.value_or(kRecipes[made % 4]),
                       0, std::move(origin));
    if (!c) return;
    auto fitted = fit(def, spec, *c, keep_size);
    if (!fitted || !fits_target(def, *fitted, target)) return;
    Case key = *fitted;
    key.origin.clear();
    if (!seen.insert(describe(key)).second) return;
    fitted->seed = mix64(seed ^ (made * 0x9e3779b97f4a7c15ull));
    sections.back().push_back(std::move(*fitted));
    ++made;
  }
};

}  // namespace

RecipeParams recipe_params(const Case& c, int t) {
  RecipeParams p;
  p.recipe = c.recipe;
  p.keep = c.tensors[size_t(t)].keep;
  switch (c.recipe) {
    case Recipe::ints:
      // Small integers, a quarter of them zero: sums of a few thousand stay
      // exact in every output type but f16 and bf16.
      p.int_range = 3, p.density = 0.75;
      break;
    case Recipe::mixed:
      p.exp_lo = kMixedExpLo, p.exp_hi = kMixedExpHi;
      break;
    case Recipe::specials:
      p.density = std::min(0.25, 4.0 / std::max(1.0, double(c.geom(t).count())));
      break;
    case Recipe::uniform:
    case Recipe::offset:  // the default large mean over a small spread
      break;
  }
  return p;
}

double elements(const Case& c) {
  double n = 0;
  for (size_t i = 0; i < c.tensors.size(); ++i) n += double(c.geom(int(i)).count());
  return n;
}

double case_bytes(const Case& c) {
  double bytes = 0;
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const double b = buffer_bytes(c.geom(int(i)));
    bytes += 2 * b + 4096;                                  // live and as handed (the snapshots)
    if (c.tensors[i].role != Role::input) bytes += b;       // the call before's outputs (the executor's look back)
    if (c.tensors[i].role == Role::inout) bytes += b;       // initial values redrawn for the reference
  }
  return bytes;  // the reference runs on the host (host_bytes)
}

double host_bytes(const Def& def, const Case& c, BackendKind backend) {
  double fp64 = 0, outputs = 0, images = 0, largest_input = 0, buffers = 0;
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const TensorGeom g = c.geom(int(i));
    const double b = buffer_bytes(g);
    fp64 += 8.0 * double(g.count());
    buffers += b;
    if (c.tensors[i].role == Role::input) {
      largest_input = std::max(largest_input, b);
    } else {
      outputs += 8.0 * double(g.count());
      images += b;  // the executor's image of this call's output (the call before's stays in backend memory)
      if (c.tensors[i].role == Role::inout) largest_input = std::max(largest_input, b);
    }
  }
  // The FP64 reference's tensors, the same-precision build's (a second set),
  // the allowed error per output element.
  double bytes = fp64 + (def.tolerance.form == ToleranceForm::same_precision ? fp64 : 0) + outputs + images;
  bytes += double(16 << 20);  // allocator slack, the reference's own memory
  if (backend == BackendKind::cuda) {
    bytes += largest_input;  // each input's span downloaded for the reference, one at a time
  } else {
    bytes += 2 * buffers + images;  // the buffers themselves: live, as handed, the call before's outputs
    if (case_bytes(c) <= double(1 << 20)) bytes += 15 * buffers;  // planned: staged copies and captures
  }
  return bytes;
}

bool consistent(const Def& def, const Case& c) {
  if (c.sizes.size() != def.sizes.size() || c.tensors.size() != def.tensors.size() ||
      c.scalars.size() != def.scalars.size())
    return false;
  const auto sizes = sizes_of(c);
  if (!def.in_range(sizes)) return false;
  for (size_t i = 0; i < def.tensors.size(); ++i) {
    const auto shape = def.shape(int(i), sizes);
    const CaseTensor& t = c.tensors[i];
    if (!shape || *shape != t.shape || t.strides.size() != t.shape.size() || t.offset < 0) return false;
    if (std::any_of(t.strides.begin(), t.strides.end(), [](int64_t s) { return s < 1; })) return false;
  }
  return true;
}

bool inside(const Def& def, const Spec& spec, const Case& c) {
  if (!consistent(def, c)) return false;
  const auto ctx_owner = case_context(c);  // sizes, scalars and tensors by name
  const EvalContext& ctx = *ctx_owner;
  return std::all_of(spec.requires_.begin(), spec.requires_.end(), [&](auto& r) { return r.holds(ctx); });
}

std::optional<Case> fit(const Def& def, const Spec& spec, const Case& c, int keep_size) {
  if (inside(def, spec, c)) return c;
  const std::vector<int64_t> sizes = def.clamped(sizes_of(c));
  const std::vector<double> scalars = scalars_of(c);
  const std::vector<LayoutParts> layouts = c.tensors.size() == def.tensors.size() ? layouts_of(c) : plain(def);
  auto attempt = [&](const std::vector<int64_t>& s) -> std::optional<Case> {
    for (const auto& l : {layouts, plain(def)}) {
      auto x = make_case(def, s, l, scalars, c.recipe, c.seed, c.origin, &c);
      if (x && inside(def, spec, *x)) return x;
    }
    return std::nullopt;
  };
  if (auto x = attempt(sizes)) return x;
  // One size at a time, the others first, each to the nearest candidate value.
  std::vector<int> order;
  for (int d = 0; d < int(sizes.size()); ++d)
    if (d != keep_size) order.push_back(d);
  if (keep_size >= 0 && keep_size < int(sizes.size())) order.push_back(keep_size);
  for (int d : order) {
    std::vector<int64_t> values = boundary_values(def.sizes[size_t(d)]);
    for (auto& s : sizes) values.push_back(clamp_to(def.sizes[size_t(d)], s));
    std::sort(values.begin(), values.end(), [&](int64_t a, int64_t b) {
      const int64_t da = std::abs(a - sizes[size_t(d)]), db = std::abs(b - sizes[size_t(d)]);
      return da != db ? da < db : a < b;
    });
    for (int64_t v : values) {
      std::vector<int64_t> s = sizes;
      s[size_t(d)] = v;
      if (auto x = attempt(s)) return x;
    }
  }
  // All sizes alike (requires such as `rows == n`).
  std::vector<int64_t> alike = {keep_size >= 0 && keep_size < int(sizes.size()) ? sizes[size_t(keep_size)] : 1};
  for (auto& s : def.sizes)
    for (int64_t v : boundary_values(s)) alike.push_back(v);
  for (int64_t v : alike)
    if (auto x = attempt(def.clamped(std::vector<int64_t>(sizes.size(), v)))) return x;
  return std::nullopt;
}

std::vector<Case> sweep(const Def& def, const Spec& spec, uint64_t seed, const SweepTarget& target) {
  SweepBuilder b{def, spec, seed, target, {}, {}};
  const size_t ns = def.sizes.size(), nt = def.tensors.size();
  std::vector<int64_t> small(ns), medium(ns);
  for (size_t d = 0; d < ns; ++d)
    small[d] = small_value(def.sizes[d]), medium[d] = clamp_to(def.sizes[d], kMedium[d % std::size(kMedium)]);
  const auto compact = plain(def);
  b.section();
  // 1. Each size at its boundary values, the others small.
  for (size_t d = 0; d < ns; ++d)
    for (int64_t v : boundary_values(def.sizes[d])) {
      std::vector<int64_t> s = small;
      s[d] = v;
      b.add(s, compact, fmt::format("boundary {}={}", def.sizes[d].name, v), int(d));
    }
  b.section();
  // 2. All sizes at once at the same boundary value (up to what the target holds).
  for (int64_t v : {1, 2, 3, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025})
    b.add(std::vector<int64_t>(ns, v), compact, fmt::format("boundary all sizes {}", v));
  b.section();
  // 3. Layouts, one tensor at a time: padded rows, offset base, column-major
  // (2-D and up), column-major padded and offset; then all tensors at once.
  bool any_2d = false;
  for (size_t t = 0; t < nt; ++t) {
    const size_t nd = def.tensors[t].shape.size();
    if (nd == 0) continue;
    any_2d |= nd >= 2;
    struct Kind {
      LayoutParts l;
      const char* what;
    };
    std::vector<Kind> kinds = {{{false, 3, 0}, nd == 1 ? "strided" : "padded rows"}, {{false, 0, 1}, "offset+1"}};
    if (nd >= 2) kinds.push_back({{true, 0, 0}, "column-major"}), kinds.push_back({{true, 3, 1}, "column-major padded offset+1"});
    else kinds.push_back({{false, 5, 1}, "strided offset+1"});
    for (const Kind& k : kinds) {
      auto l = compact;
      l[t] = k.l;
      b.add(medium, l, fmt::format("layout {} {}", def.tensors[t].name, k.what));
    }
  }
  b.add(medium, std::vector<LayoutParts>(nt, {false, 2, 1}), "layout all padded offset+1");
  if (any_2d) b.add(medium, std::vector<LayoutParts>(nt, {true, 1, 1}), "layout all column-major padded offset+1");
  b.section();
  // 4. Every recipe at a few shapes: middling, 64s, the last size long.
  {
    std::vector<int64_t> sixty4(ns, 64), longest = small;
    if (ns > 0) longest[ns - 1] = def.sizes[ns - 1].max;
    for (const auto& [s, what] : {std::pair{medium, "middling"}, {sixty4, "64"}, {longest, "last size longest"}})
      for (Recipe r : kRecipes) b.add(s, compact, fmt::format("recipe {} ({} sizes)", name(r), what), -1, r);
  }
  b.section();
  // 5. Special values where few elements decide each result.
  for (int64_t v : {1, 2, 3}) b.add(std::vector<int64_t>(ns, v), compact, "specials, tiny sizes", -1, Recipe::specials);
  if (!def.scalars.empty()) {
    b.section();
    // 6. Each scalar's values, on inexact and on exact inputs.
    for (size_t j = 0; j < def.scalars.size(); ++j)
      for (double v : def.scalars[j].candidates())
        for (Recipe r : {Recipe::uniform, Recipe::ints}) {
          std::vector<double> sv = b.scalars();
          sv[j] = v;
          b.add(medium, compact, fmt::format("scalar {}={:g}", def.scalars[j].name, v), -1, r, sv);
        }
  }
  b.section();
  // 7. Large: every size at its maximum, halved (largest first) until the
  // target holds it.
  {
    std::vector<int64_t> s(ns);
    for (size_t d = 0; d < ns; ++d) s[d] = def.sizes[d].max;
    for (int guard = 0; guard < 64; ++guard) {
      auto c = make_case(def, s, compact, b.scalars(), Recipe::uniform, 0, "");
      if (c && fits_target(def, *c, target)) break;
      if (!shrink_to(def, s, c ? elements(*c) / 2 : 0)) break;
    }
    b.add(s, compact, "large", -1, Recipe::uniform);  // finite values: what a large case finds is the size
  }
  return b.interleaved();
}

std::optional<Case> random_case(const Def& def, const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim) {
  uint64_t state = hash3(seed, 0xc057, index);
  auto next = [&] { return state = mix64(state); };
  std::vector<int64_t> sizes;
  for (const SizeDef& s : def.sizes) {
    const int64_t hi = std::max(s.min, std::min(s.max, lim.max_random_dim));
    const uint64_t r = next() % 100;
    int64_t v;
    if (r < 35) {
      v = s.min + int64_t(next() % uint64_t(std::min<int64_t>(hi, s.min + 64) - s.min + 1));
    } else if (r < 65) {
      const auto b = boundary_values(s);
      v = b[next() % b.size()] + int64_t(next() % 3) - 1;
    } else {
      v = int64_t(std::pow(double(std::max<int64_t>(hi, 1)), unit_double(next())));
    }
    sizes.push_back(std::clamp(v, s.min, hi));
  }
  if (!shrink_to(def, sizes, lim.max_random_work)) return std::nullopt;
  std::vector<LayoutParts> layouts;
  for (size_t t = 0; t < def.tensors.size(); ++t) {
    LayoutParts l;
    l.col_major = def.tensors[t].shape.size() >= 2 && next() % 2;
    l.pad = next() % 10 < 3 ? int64_t(1 + next() % 16) : 0;
    l.offset = next() % 10 < 2 ? int64_t(1 + next() % 3) : 0;
    layouts.push_back(l);
  }
  std::vector<double> scalars;
  for (const ScalarDef& s : def.scalars) {
    const auto cand = s.candidates();
    if (s.listed || next() % 2) scalars.push_back(cand[next() % cand.size()]);
    else scalars.push_back(s.lo + (s.hi - s.lo) * unit_double(next()));
  }
  const Recipe recipe = kRecipes[next() % 4];
  auto c = make_case(def, sizes, layouts, scalars, recipe, next(), "random #" + std::to_string(index));
  if (!c) return std::nullopt;
  return fit(def, spec, *c);
}

Case resize(const Def& def, const Case& c, std::span<const int64_t> sizes, bool keep_layout) {
  std::vector<LayoutParts> layouts = layouts_of(c);
  if (!keep_layout)
    for (auto& l : layouts) l.pad = 0, l.offset = 0;
  auto x = make_case(def, def.clamped(sizes), layouts, scalars_of(c), c.recipe, c.seed, c.origin, &c);
  return x ? *x : c;  // no valid shapes for these sizes: nothing to resize to
}

namespace {

struct Genome {
  std::vector<uint16_t> sizes;
  std::vector<uint8_t> layouts, scalars;
  uint8_t recipe = 0;
  uint64_t seed = 0;
};
size_t genome_bytes(const Def& def) { return 2 * def.sizes.size() + def.tensors.size() + def.scalars.size() + 1 + 8; }

int64_t size_cap(const SizeDef& s, const CodecLimits& lim) { return std::max(s.min, std::min(s.max, lim.max_dim - 1)); }

LayoutParts layout_of_byte(uint8_t b, size_t ndim) {
  return {ndim >= 2 && (b & 1), (b >> 1) & 15, (b >> 5) & 3};
}
uint8_t byte_of_layout(const LayoutParts& l) {
  return uint8_t(int(l.col_major) | (std::clamp<int64_t>(l.pad, 0, 15) << 1) | (std::clamp<int64_t>(l.offset, 0, 3) << 5));
}
double scalar_of_byte(const ScalarDef& s, uint8_t b) {
  const auto cand = s.candidates();
  if (s.listed) return cand[b % cand.size()];
  if (b < 128) return cand[b % cand.size()];
  return s.lo + (s.hi - s.lo) * double(b - 128) / 127.0;
}
uint8_t byte_of_scalar(const ScalarDef& s, double v) {
  const auto cand = s.candidates();
  for (size_t i = 0; i < cand.size(); ++i)
    if (cand[i] == v) return uint8_t(i);
  if (s.listed || s.hi <= s.lo) return 0;
  return uint8_t(128 + std::lround(std::clamp((v - s.lo) / (s.hi - s.lo), 0.0, 1.0) * 127.0));
}

// The case of a genome, its sizes brought within the limits (the largest
// other than `keep` halved first).
Case build(const Def& def, const Genome& g, const CodecLimits& lim, int keep = -1) {
  std::vector<int64_t> sizes;
  for (size_t d = 0; d < def.sizes.size(); ++d) {
    const SizeDef& s = def.sizes[d];
    sizes.push_back(s.min + int64_t(g.sizes[d]) % (size_cap(s, lim) - s.min + 1));
  }
  shrink_to(def, sizes, std::min(lim.max_elements, lim.max_work), keep);
  std::vector<LayoutParts> layouts;
  for (size_t t = 0; t < def.tensors.size(); ++t) layouts.push_back(layout_of_byte(g.layouts[t], def.tensors[t].shape.size()));
  std::vector<double> scalars;
  for (size_t j = 0; j < def.scalars.size(); ++j) scalars.push_back(scalar_of_byte(def.scalars[j], g.scalars[j]));
  const Recipe recipe = kRecipes[g.recipe % 4];
  if (auto c = make_case(def, sizes, layouts, scalars, recipe, g.seed, "fuzz")) return *c;
  std::vector<int64_t> mins;
  for (auto& s : def.sizes) mins.push_back(s.min);
  if (auto c = make_case(def, mins, layouts, scalars, recipe, g.seed, "fuzz")) return *c;
  // No valid shapes even at the minima: a case fit_requires refuses.
  Case c;
  c.op = "custom", c.recipe = recipe, c.seed = g.seed, c.origin = "fuzz";
  for (size_t d = 0; d < def.sizes.size(); ++d) c.sizes.push_back({def.sizes[d].name, mins[d]});
  return c;
}

Genome genome_of(const Def& def, const Case& c, const CodecLimits& lim) {
  Genome g;
  for (size_t d = 0; d < def.sizes.size(); ++d) {
    const int64_t v = d < c.sizes.size() ? c.sizes[d].value : def.sizes[d].min;
    g.sizes.push_back(uint16_t(std::clamp<int64_t>(v - def.sizes[d].min, 0, size_cap(def.sizes[d], lim) - def.sizes[d].min)));
  }
  for (size_t t = 0; t < def.tensors.size(); ++t)
    g.layouts.push_back(t < c.tensors.size() ? byte_of_layout(layout_parts(c.tensors[t])) : 0);
  for (size_t j = 0; j < def.scalars.size(); ++j)
    g.scalars.push_back(j < c.scalars.size() ? byte_of_scalar(def.scalars[j], c.scalars[j].value) : 0);
  g.recipe = uint8_t(c.recipe);
  g.seed = c.seed;
  return g;
}

}  // namespace

Case decode(const Def& def, const uint8_t* data, size_t size, const CodecLimits& lim) {
  std::vector<uint8_t> raw(genome_bytes(def), 0);
  std::memcpy(raw.data(), data, std::min(size, raw.size()));
  Genome g;
  size_t at = 0;
  for (size_t d = 0; d < def.sizes.size(); ++d, at += 2) g.sizes.push_back(uint16_t(raw[at] | raw[at + 1] << 8));
  for (size_t t = 0; t < def.tensors.size(); ++t) g.layouts.push_back(raw[at++]);
  for (size_t j = 0; j < def.scalars.size(); ++j) g.scalars.push_back(raw[at++]);
  g.recipe = raw[at++];
  std::memcpy(&g.seed, raw.data() + at, 8);
  return build(def, g, lim);
}

std::vector<uint8_t> encode(const Def& def, const Case& c, const CodecLimits& lim) {
  const Genome g = genome_of(def, c, lim);
  std::vector<uint8_t> out;
  for (uint16_t v : g.sizes) out.push_back(uint8_t(v & 0xff)), out.push_back(uint8_t(v >> 8));
  out.insert(out.end(), g.layouts.begin(), g.layouts.end());
  out.insert(out.end(), g.scalars.begin(), g.scalars.end());
  out.push_back(g.recipe);
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(g.seed >> (8 * i)));
  return out;
}

Case mutate(const Def& def, const Case& c, uint64_t random, const CodecLimits& lim) {
  uint64_t h = random;
  auto next = [&](uint64_t n) { h = mix64(h + 0x9e3779b97f4a7c15ull); return n ? h % n : 0; };
  Genome g = genome_of(def, c, lim);
  int keep = -1;
  switch (next(8)) {
    case 0: case 1: case 2:  // one size to one of its boundary values (the moves that matter most)
      if (!def.sizes.empty()) {
        keep = int(next(def.sizes.size()));
        const SizeDef& s = def.sizes[size_t(keep)];
        const auto b = boundary_values(s);
        g.sizes[size_t(keep)] = uint16_t(std::clamp<int64_t>(b[next(b.size())], s.min, size_cap(s, lim)) - s.min);
      }
      break;
    case 3:  // one size one up or down
      if (!def.sizes.empty()) {
        keep = int(next(def.sizes.size()));
        g.sizes[size_t(keep)] = uint16_t(g.sizes[size_t(keep)] + (next(2) ? 1 : -1));
      }
      break;
    case 4:
      if (!g.layouts.empty()) g.layouts[next(g.layouts.size())] = uint8_t(next(256));
      break;
    case 5: g.recipe = uint8_t(next(4)); break;
    case 6:
      if (!g.scalars.empty()) {
        g.scalars[next(g.scalars.size())] = uint8_t(next(256));
        break;
      }
      [[fallthrough]];
    default: g.seed = mix64(g.seed ^ h); break;
  }
  return build(def, g, lim, keep);
}

}  // namespace assay::custom
