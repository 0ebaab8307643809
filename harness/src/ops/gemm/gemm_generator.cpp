#include "ops/gemm/gemm_generator.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "case/rng.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_operands.h"

namespace assay::gemm {
namespace {

constexpr int64_t kTiles[] = {8, 16, 32, 64, 128, 256};
constexpr std::pair<double, double> kScalars[] = {
    {1, 0}, {1, 1}, {0.7, 1.3}, {-1, 0}, {1.3, 0.7}, {1, -1}, {0.7, 0}, {-1, 1.3}, {0, 1}, {1, 0.7},
    {1.3, 1}, {0, 0}, {-1, -1}, {0.7, -1}, {1, 1.3}, {1.3, 0}, {-1, 0.7}, {0, 1.3}, {0.7, 0.7}, {1.3, -1},
    {-1, 1}, {0, -1}, {0.7, 1}, {1.3, 1.3}, {0, 0.7}};
constexpr Recipe kRecipes[] = {Recipe::ints, Recipe::uniform, Recipe::mixed, Recipe::specials};

std::vector<int64_t> boundary_sizes() {
  std::set<int64_t> s = {0, 1, 2, 3, 5, 7, 13, 31, 61, 127, 251};
  for (int64_t t : kTiles) s.insert({t - 1, t, t + 1});
  return {s.begin(), s.end()};
}

// Builds the sweep one section at a time, rotating recipes and scalars so
// every combination shows up without a cross product; the sections are then
// interleaved so that even a short run sees every kind of case.
struct SweepBuilder {
  const Spec& spec;
  uint64_t seed;
  std::vector<std::vector<Problem>> sections;
  std::set<std::string> seen;
  size_t made = 0;

  void section() { sections.emplace_back(); }
  std::vector<Problem> interleaved() {
    std::vector<Problem> out;
    for (size_t i = 0; out.size() < made; ++i)
      for (auto& s : sections)
        if (i < s.size()) out.push_back(s[i]);
    return out;
  }

  Problem base(int64_t m, int64_t n, int64_t k, std::string origin) const {
    Problem c;
    c.m = m, c.n = n, c.k = k;
    { const auto d = spec_dtypes(spec); c.a_type = d[0], c.b_type = d[1], c.c_type = d[2]; }
    c.a = make_layout(m, k, false), c.b = make_layout(k, n, false), c.c = make_layout(m, n, false);
    size_t i = made;
    c.recipe = kRecipes[i % 4];
    std::tie(c.alpha, c.beta) = kScalars[(i / 4) % std::size(kScalars)];
    c.origin = std::move(origin);
    return c;
  }
  void add(Problem c) {
    if (c.recipe == Recipe::specials && c.alpha == 0) c.alpha = 1;  // BLAS: alpha = 0 never reads A*B
    auto fitted = fit_requires(c, spec);
    if (!fitted) return;
    fitted->seed = mix64(seed ^ (made * 0x9e3779b97f4a7c15ull));
    Problem key = *fitted;
    key.seed = 0, key.origin.clear();
    if (!seen.insert(describe(to_case(key))).second) return;
    sections.back().push_back(*fitted);
    ++made;
  }
};

}  // namespace

Layout make_layout(int64_t rows, int64_t cols, bool col_major, int64_t pad, int64_t offset) {
  if (col_major) return Layout{1, std::max<int64_t>(rows, 1) + pad, offset};
  return Layout{std::max<int64_t>(cols, 1) + pad, 1, offset};
}

namespace {
// Bytes of one tensor's guarded buffer, as GuardedTensor allocates it.
double buffer_bytes(const TensorGeom& g) { return double(g.span()) * dtype_bytes(g.dtype) + 2.0 * 1024 + 8; }
// Elements of C in one block of the reference (reference_block_rows).
double block_elements(const Problem& c, int64_t extra_cols) {
  return double(reference::reference_block_rows(c.m, c.n, extra_cols)) * double(c.n);
}
}  // namespace

double case_bytes(const Problem& c) {
  auto t = tensors(c);
  double bytes = 0;
  for (auto& g : t) bytes += 2 * buffer_bytes(g) + 4096;  // live and as handed (the snapshots)
  bytes += 2 * buffer_bytes(t[C]);                          // C0 scratch, the call before's C
  // FP64 reference: A, |A|, B, |B| widened, A*B and |A|*|B|, one block of the result.
  const double mn = double(c.m) * double(c.n);
  bytes += 16.0 * (double(c.m) * double(c.k) + double(c.k) * double(c.n)) + 16.0 * mn;
  bytes += 24.0 * std::min(mn, block_elements(c, 0));
  return bytes;
}

double host_bytes(const Problem& c, BackendKind backend) {
  auto t = tensors(c);
  const double a = buffer_bytes(t[A]), b = buffer_bytes(t[B]), cc = buffer_bytes(t[C]);
  const bool host = backend == BackendKind::host;
  const double mn = double(c.m) * double(c.n);
  const double block = std::min(mn, block_elements(c, host ? c.k : 0));
  // The executor's host copies (exec/executor.cpp, check_call): one changed
  // input's image, or this call's C (the call before's stays in backend
  // memory) with the reference's block (24 bytes an element).
  double bytes = std::max({a, b, cc + 24.0 * block});
  bytes += double(16 << 20);  // the rest: allocator slack, Eigen's packing buffers, code run the first time
  if (host) {
    bytes += 2 * (a + b + cc) + cc + (reads_c0(c) ? cc : 0);  // buffers: live, as handed, the call before's C, C0's scratch
    // Planned cases (with --batch; at most 1 MiB: exec/executor.h, plannable)
    // also hold staged inputs, their copies as handed and three captures.
    if (case_bytes(c) <= double(1 << 20)) bytes += 15 * (a + b + cc);
    // Eigen: B and |B| whole, A's rows of a block and their products.
    bytes += 16.0 * double(c.k) * double(c.n) + 16.0 * block / std::max<double>(1, double(c.n)) * double(c.k + c.n);
  }
  return bytes;
}

std::optional<Problem> fit_requires(const Problem& c, const Spec& spec) {
  auto holds = [&](const Problem& x) {
    Context ctx(x);
    return std::all_of(spec.requires_.begin(), spec.requires_.end(), [&](auto& r) { return r.holds(ctx); });
  };
  if (holds(c)) return c;
  // Relax layouts first (keep the shape), then round dimensions up.
  auto relayout = [](Problem x, int how) {
    bool cm[3] = {how == 2, how == 2, how == 2};
    const Layout* ls[3] = {&x.a, &x.b, &x.c};
    if (how == 0) {  // same orientation, no padding, no offset
      for (int i = 0; i < 3; ++i) cm[i] = ls[i]->row_stride == 1 && ls[i]->col_stride != 1;
    }
    x.a = make_layout(x.m, x.k, cm[0]), x.b = make_layout(x.k, x.n, cm[1]), x.c = make_layout(x.m, x.n, cm[2]);
    return x;
  };
  for (int64_t mult = 1; mult <= 256; mult *= 2) {
    Problem r = c;
    auto up = [mult](int64_t v) { return std::max<int64_t>((v + mult - 1) / mult * mult, v == 0 ? 0 : mult); };
    r.m = up(c.m), r.n = up(c.n), r.k = up(c.k);
    r.a = make_layout(r.m, r.k, c.a.row_stride == 1 && c.a.col_stride != 1, 0, c.a.offset);
    r.b = make_layout(r.k, r.n, c.b.row_stride == 1 && c.b.col_stride != 1, 0, c.b.offset);
    r.c = make_layout(r.m, r.n, c.c.row_stride == 1 && c.c.col_stride != 1, 0, c.c.offset);
    if (mult == 1) r = c;
    for (int how = -1; how < 3; ++how) {
      Problem x = how < 0 ? r : relayout(r, how);
      if (holds(x)) return x;
    }
  }
  return std::nullopt;
}

bool huge_case_fits(const Problem& c, const SweepTarget& target) {
  return target.backend == BackendKind::cuda && case_bytes(c) <= target.max_bytes &&
         host_bytes(c, target.backend) <= target.max_host_bytes;
}

std::vector<Problem> sweep(const Spec& spec, uint64_t seed) {
  return sweep(spec, seed, SweepTarget{spec.backend, INFINITY});
}

std::vector<Problem> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target) {
  SweepBuilder b{spec, seed, {}, {}};
  const auto sizes = boundary_sizes();
  b.section();
  // 1. Boundary sizes, one dimension at a time, then all three together.
  for (int64_t v : sizes) {
    b.add(b.base(v, 33, 19, "boundary m"));
    b.add(b.base(29, v, 35, "boundary n"));
    b.add(b.base(31, 37, v, "boundary k"));
    b.add(b.base(v, v, v, "boundary m=n=k"));
  }
  b.section();
  // 2. Layouts: each operand transposed, padded, offset by one element.
  for (int which = 0; which < 3; ++which) {
    for (int kind = 0; kind < 5; ++kind) {
      Problem c = b.base(37, 45, 29, "layout");
      Layout* l[3] = {&c.a, &c.b, &c.c};
      int64_t rows[3] = {c.m, c.k, c.m}, cols[3] = {c.k, c.n, c.n};
      bool col = kind == 0 || kind == 2 || kind == 4;
      int64_t pad = kind >= 1 && kind != 3 ? 3 : 0, off = kind >= 3 ? 1 : 0;
      *l[which] = make_layout(rows[which], cols[which], col, pad, off);
      c.origin = std::string("layout ") + "ABC"[which] + (col ? " col-major" : " row-major") +
                 (pad ? " padded" : "") + (off ? " offset+1" : "");
      b.add(c);
    }
  }
  for (bool col : {false, true}) {
    Problem c = b.base(64, 48, 80, col ? "layout all col-major padded offset" : "layout all row-major padded offset");
    c.a = make_layout(c.m, c.k, col, 1, 1), c.b = make_layout(c.k, c.n, col, 5, 1), c.c = make_layout(c.m, c.n, col, 2, 1);
    b.add(c);
  }
  b.section();
  // 3. Every alpha/beta pair, on inexact and on exact values.
  for (auto [alpha, beta] : kScalars)
    for (Recipe r : {Recipe::uniform, Recipe::ints}) {
      Problem c = b.base(33, 31, 35, "scalars");
      c.alpha = alpha, c.beta = beta, c.recipe = r;
      b.add(c);
    }
  b.section();
  // 4. Every recipe at a few telling shapes, including long k.
  for (auto [m, n, k] : {std::tuple{17, 19, 23}, {64, 64, 64}, {65, 63, 257}, {128, 96, 1024}, {96, 128, 4096}})
    for (Recipe r : kRecipes) {
      Problem c = b.base(m, n, k, "recipe");
      c.recipe = r;
      b.add(c);
    }
  b.section();
  // 4b. Special values where one or two products decide each element (beta = 0):
  // a flushed subnormal or a lost 0*Inf cannot hide behind the other terms.
  for (int64_t k : {1, 2, 3}) {
    Problem c = b.base(16, 16, k, "specials, tiny k");
    c.recipe = Recipe::specials, c.alpha = 1, c.beta = 0;
    b.add(c);
  }
  b.section();
  // 5. Large cases that fill the GPU (the host skips what exceeds its limits).
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{512, 512, 512}, {1000, 1000, 1000},
                         {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 1024}, {4097, 4095, 4099}})
    b.add(b.base(m, n, k, "large"));
  b.section();
  // 6. 32-bit limits: a dimension past 65,535 tiles; on the GPU, an input past
  // 2^31 elements with the other dimensions tiny (i*lda + p overflows an int;
  // odd sizes so no tile divides them), where the memory budget holds it.
  const int64_t huge = (int64_t(1) << 20) + 7, mid = (int64_t(1) << 11) + 3;  // huge * mid > 2^31
  for (auto [m, n, k, what] : {std::tuple{huge, int64_t(3), mid, "A"}, {int64_t(3), huge, mid, "B"}}) {
    Problem c = b.base(m, n, k, std::string("index past 2^31 elements (") + what + ")");
    if (huge_case_fits(c, target)) b.add(c);  // cuda only, within its memory budget
  }
  b.add(b.base(2097153, 2, 5, "m past 65,535 tiles"));
  b.add(b.base(2, 2097153, 5, "n past 65,535 tiles"));
  return b.interleaved();
}

std::optional<Problem> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim) {
  uint64_t state = hash3(seed, 0xca5e, index);
  auto next = [&] { return state = mix64(state); };
  auto dim = [&]() -> int64_t {
    uint64_t r = next() % 100;
    if (r < 35) return int64_t(next() % uint64_t(std::min<int64_t>(lim.max_random_dim, 64) + 1));
    if (r < 65) {
      int64_t t = kTiles[next() % std::size(kTiles)];
      return std::min(lim.max_random_dim, t * int64_t(1 + next() % 8) + int64_t(next() % 3) - 1);
    }
    double u = unit_double(next());
    return int64_t(std::pow(double(lim.max_random_dim), u));
  };
  Problem c;
  c.m = dim(), c.n = dim(), c.k = dim();
  while (double(c.m) * double(c.n) * double(c.k) > lim.max_random_work) {
    int64_t* big = &c.m;
    if (c.n > *big) big = &c.n;
    if (c.k > *big) big = &c.k;
    *big /= 2;
  }
  { const auto d = spec_dtypes(spec); c.a_type = d[0], c.b_type = d[1], c.c_type = d[2]; }
  auto layout = [&](int64_t rows, int64_t cols) {
    bool col = next() % 2;
    int64_t pad = next() % 10 < 3 ? int64_t(1 + next() % 16) : 0;
    int64_t off = next() % 10 < 2 ? int64_t(1 + next() % 3) : 0;
    return make_layout(rows, cols, col, pad, off);
  };
  c.a = layout(c.m, c.k), c.b = layout(c.k, c.n), c.c = layout(c.m, c.n);
  std::tie(c.alpha, c.beta) = kScalars[next() % std::size(kScalars)];
  c.recipe = kRecipes[next() % 4];
  if (c.recipe == Recipe::specials && c.alpha == 0) c.alpha = 1;
  c.seed = next();
  c.origin = "random #" + std::to_string(index);
  return fit_requires(c, spec);
}

}  // namespace assay::gemm
