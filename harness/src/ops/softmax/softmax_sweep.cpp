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
constexpr int64_t kPastWord = 70001;  // n past 2^16

// The sum of a row of n terms of at most 1 passes f16's largest value past
// 65504 terms: an f16 accumulator's own limit, outside what compute f16 claims.
int64_t max_row_length(const Spec& spec) { return spec.compute == Compute::f16 ? 32768 : int64_t(1) << 40; }

struct SweepBuilder {
  const Spec& spec;
  bool log;
  uint64_t seed;
  std::vector<std::vector<Case>> sections;
  std::set<std::string> seen;
  size_t made = 0;

  void section() { sections.emplace_back(); }
  std::vector<Case> interleaved() {
    std::vector<Case> out;
    for (size_t i = 0; out.size() < made; ++i)
      for (auto& s : sections)
        if (i < s.size()) out.push_back(s[i]);
    return out;
  }
  Parts base(int64_t rows, int64_t n, std::string origin) const {
    Parts p = plain_parts(spec, log, Shape{false, 1, rows, n}, std::move(origin));
    p.recipe = kRecipes[made % 4];
    return p;
  }
  Parts batched(int64_t b, int64_t rows, int64_t n, std::string origin) const {
    Parts p = base(rows, n, std::move(origin));
    p.shape = Shape{true, b, rows, n};
    return p;
  }
  void add(const Parts& p) {
    if (p.shape.n > max_row_length(spec)) return;
    auto fitted = fit_requires(make_case(p), spec);
    if (!fitted) return;
    fitted->seed = mix64(seed ^ (made * 0x9e3779b97f4a7c15ull));
    Case key = *fitted;
    key.seed = 0, key.origin.clear();
    if (!seen.insert(describe(key)).second) return;
    sections.back().push_back(*fitted);
    ++made;
  }
};

Layout transposed(int64_t pad = 0, int64_t offset = 0) { return Layout{true, pad, offset, 0}; }
Layout padded(int64_t pad, int64_t offset = 0) { return Layout{false, pad, offset, 0}; }

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
    case Recipe::uniform: break;
  }
  return p;
}

double work(const Case& c) { return shape_of(c).elements(); }

namespace {
double buffer_bytes(const TensorGeom& g) { return double(g.span()) * dtype_bytes(g.dtype) + 2.0 * 1024 + 8; }
}  // namespace

double case_bytes(const Case& c) {
  const Shape s = shape_of(c);
  const double x = buffer_bytes(c.geom(X)), y = buffer_bytes(c.geom(Y));
  // Live and as handed (snapshots), and the cuda reference's ref and bound for one block.
  return 2 * (x + y) + 2 * 4096 + 16.0 * block_elements(s);
}

double host_bytes(const Case& c, BackendKind backend) {
  const Shape s = shape_of(c);
  const double x = buffer_bytes(c.geom(X)), y = buffer_bytes(c.geom(Y));
  const double block = 16.0 * block_elements(s);  // the reference's block of ref and bound
  // The executor's host images: up to three of y (calls before and this one),
  // then one of x (changed input) or the reference's block.
  double bytes = 3 * y + std::max(x, block) + double(16 << 20);
  if (backend == BackendKind::host) {
    bytes += 2 * (x + y);                                 // buffers: live and as handed
    if (case_bytes(c) <= double(1 << 20)) bytes += 15 * (x + y);  // planned: staged sets and captures
  }
  return bytes;
}

double default_timeout(const Case& c, BackendKind backend) {
  // A naive kernel: three passes with an exp (host ~10 M elements/s, GPU ~1 G/s), plus 5 s.
  return 5.0 + work(c) / (backend == BackendKind::host ? 5e6 : 1e9);
}

bool huge_case_fits(const Case& c, const SweepTarget& target) {
  return target.backend == BackendKind::cuda && case_bytes(c) <= target.max_bytes &&
         host_bytes(c, target.backend) <= target.max_host_bytes;
}

std::optional<Case> fit_requires(const Case& c, const Spec& spec) {
  auto holds = [&](const Case& x) {
    Context ctx(x);
    return std::all_of(spec.requires_.begin(), spec.requires_.end(), [&](auto& r) { return r.holds(ctx); });
  };
  if (holds(c)) return c;
  const Parts p = parts_of(c);
  // Layout relaxations: same orientation without padding or offsets; row-major plain; column-major.
  auto relayouts = [&](Parts q) {
    std::vector<Parts> out{q};
    Parts a = q;
    a.x = Layout{q.x.col_major, 0, 0, 0}, a.y = Layout{q.y.col_major, 0, 0, 0};
    out.push_back(a);
    a.x = a.y = Layout{};
    out.push_back(a);
    a.x = a.y = Layout{true, 0, 0, 0};
    out.push_back(a);
    return out;
  };
  auto first = [&](const std::vector<Parts>& shapes) -> std::optional<Case> {
    for (const Parts& s : shapes)
      for (const Parts& q : relayouts(s))
        if (Case x = make_case(q); holds(x)) return x;
    return std::nullopt;
  };
  std::vector<Parts> shapes{p};
  for (int64_t mult = 2; mult <= 1024; mult *= 2) {  // rounded up to multiples
    auto up = [mult](int64_t v) { return std::max<int64_t>((v + mult - 1) / mult * mult, v == 0 ? 0 : mult); };
    Parts q = p;
    q.shape.n = up(p.shape.n);
    shapes.push_back(q);
    q.shape.rows = up(p.shape.rows);
    shapes.push_back(q);
  }
  for (int64_t div = 2; div <= (int64_t(1) << 20); div *= 2) {  // halved (upper limits)
    Parts q = p;
    q.shape.n = std::max<int64_t>(1, p.shape.n / div);
    shapes.push_back(q);
    q.shape.rows = std::max<int64_t>(1, p.shape.rows / div);
    shapes.push_back(q);
  }
  if (auto x = first(shapes)) return x;
  if (p.shape.batched) {  // flattened to 2-D
    Parts q = p;
    q.shape = Shape{false, 1, p.shape.total_rows(), p.shape.n};
    q.x.batch_gap = q.y.batch_gap = 0;
    if (auto x = first({q})) return x;
  }
  return std::nullopt;
}

std::vector<Case> sweep(const Spec& spec, bool log, uint64_t seed, const SweepTarget& target) {
  SweepBuilder b{spec, log, seed, {}, {}};
  b.section();
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
  uint64_t state = hash3(seed, 0x50f7, index);
  auto next = [&] { return state = mix64(state); };
  const int64_t max_dim = std::max<int64_t>(lim.max_random_dim, 1);
  auto dim = [&]() -> int64_t {
    const uint64_t r = next() % 100;
    if (r < 35) return int64_t(next() % uint64_t(std::min<int64_t>(max_dim, 64) + 1));
    if (r < 65) {  // a power of two and its neighbours
      const int64_t t = int64_t(1) << (next() % 11);
      return std::clamp<int64_t>(t + int64_t(next() % 3) - 1, 0, max_dim);
    }
    return int64_t(std::pow(double(max_dim), unit_double(next())));
  };
  Parts p = plain_parts(spec, log, Shape{false, 1, dim(), dim()}, "random #" + std::to_string(index));
  if (next() % 5 == 0) p.shape.batched = true, p.shape.b = int64_t(1 + next() % 4);
  while (p.shape.elements() > lim.max_random_work) {
    int64_t& big = p.shape.rows > p.shape.n ? p.shape.rows : p.shape.n;
    big /= 2;
  }
  p.shape.n = std::min(p.shape.n, max_row_length(spec));
  auto layout = [&] {
    Layout l;
    l.col_major = next() % 4 == 0;
    l.pad = next() % 10 < 3 ? int64_t(1 + next() % 16) : 0;
    l.offset = next() % 10 < 2 ? int64_t(1 + next() % 3) : 0;
    l.batch_gap = p.shape.batched && next() % 2 ? int64_t(next() % 9) : 0;
    return l;
  };
  p.x = layout(), p.y = layout();
  p.recipe = kRecipes[next() % 4];
  p.seed = next();
  return fit_requires(make_case(p), spec);
}

}  // namespace assay::softmax
