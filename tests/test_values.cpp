// Value recipes: pure functions of their arguments that draw what each recipe
// promises, and GEMM's recipe parameters keep integer results exact.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <set>
#include <vector>

#include "backend/host/host_backend.h"
#include "case/values.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"

using namespace assay;

namespace {

constexpr DType kTypes[] = {DType::f64, DType::f32, DType::f16, DType::bf16};

RecipeParams params(Recipe r) {
  RecipeParams p;
  p.recipe = r;
  return p;
}

}  // namespace

TEST_CASE("recipe_value is a pure function of its arguments", "[values]") {
  for (Recipe r : {Recipe::ints, Recipe::uniform, Recipe::mixed, Recipe::specials}) {
    RecipeParams p = params(r);
    p.density = 0.5, p.exp_lo = -8, p.exp_hi = 8;
    INFO(name(r));
    int64_t differ_seed = 0, differ_tensor = 0, differ_pos = 0, n = 0;
    for (uint64_t row = 0; row < 40; ++row)
      for (uint64_t col = 0; col < 40; ++col) {
        double v1 = recipe_value(p, DType::f32, 42, 1, row, col);
        double v2 = recipe_value(p, DType::f32, 42, 1, row, col);
        REQUIRE(f64_bits(v1) == f64_bits(v2));
        // specials depend on the dtype (its subnormals), so draw in f16 for f16 bits
        REQUIRE(recipe_bits(p, DType::f16, 42, 1, row, col) ==
                encode(DType::f16, recipe_value(p, DType::f16, 42, 1, row, col)));
        differ_seed += f64_bits(recipe_value(p, DType::f32, 43, 1, row, col)) != f64_bits(v1);
        differ_tensor += f64_bits(recipe_value(p, DType::f32, 42, 2, row, col)) != f64_bits(v1);
        differ_pos += f64_bits(recipe_value(p, DType::f32, 42, 1, col, row)) != f64_bits(v1) && row != col;
        ++n;
      }
    // Seed, tensor and position all feed the value (ints repeat often: few distinct values).
    CHECK(differ_seed > n / 3);
    CHECK(differ_tensor > n / 3);
    CHECK(differ_pos > n / 3);
  }
}

TEST_CASE("ints recipe: integers in range, nonzero with the given density", "[values]") {
  for (int range : {1, 3, 7}) {
    for (double density : {1.0, 0.5, 0.1}) {
      RecipeParams p = params(Recipe::ints);
      p.int_range = range, p.density = density;
      INFO("range " << range << " density " << density);
      const int N = 200000;
      int64_t nonzero = 0, out_of_range = 0, not_integer = 0;
      std::set<int> seen;
      for (int i = 0; i < N; ++i) {
        double v = recipe_value(p, DType::f32, 9, 0, uint64_t(i / 500), uint64_t(i % 500));
        if (v != std::trunc(v)) ++not_integer;
        if (std::fabs(v) > range) ++out_of_range;
        nonzero += v != 0;
        seen.insert(int(v));
      }
      CHECK(not_integer == 0);
      CHECK(out_of_range == 0);
      // binomial: sd of the fraction is at most 0.0012 here
      CHECK(double(nonzero) / N == Approx(density).margin(0.01));
      // every nonzero value of the range shows up
      for (int v = -range; v <= range; ++v)
        if (v != 0) CHECK(seen.count(v) == 1);
    }
  }
}

TEST_CASE("uniform recipe: reals in [-1, 1)", "[values]") {
  RecipeParams p = params(Recipe::uniform);
  double lo = 2, hi = -2, sum = 0;
  int64_t below_half = 0, non_integer = 0;
  const int N = 200000;
  for (int i = 0; i < N; ++i) {
    double v = recipe_value(p, DType::f64, 5, 1, uint64_t(i), 3);
    lo = std::min(lo, v), hi = std::max(hi, v), sum += v;
    below_half += std::fabs(v) < 0.5;
    non_integer += v != std::trunc(v);
  }
  CHECK(lo >= -1.0);
  CHECK(hi < 1.0);
  CHECK(lo < -0.999);
  CHECK(hi > 0.999);
  CHECK(sum / N == Approx(0).margin(0.01));
  CHECK(double(below_half) / N == Approx(0.5).margin(0.01));
  CHECK(non_integer > N - 10);
}

TEST_CASE("mixed recipe: magnitudes within 2^exp_hi, spread down to 2^exp_lo", "[values]") {
  for (auto [elo, ehi] : {std::pair{-10, 10}, std::pair{-24, 3}, std::pair{0, 0}}) {
    RecipeParams p = params(Recipe::mixed);
    p.exp_lo = elo, p.exp_hi = ehi;
    INFO(elo << ".." << ehi);
    double max_abs = 0;
    std::set<int> exps;
    for (int i = 0; i < 100000; ++i) {
      double v = recipe_value(p, DType::f32, 77, 0, uint64_t(i % 300), uint64_t(i / 300));
      REQUIRE(std::isfinite(v));
      max_abs = std::max(max_abs, std::fabs(v));
      if (v != 0) exps.insert(std::ilogb(v));
    }
    CHECK(max_abs <= std::ldexp(1.0, ehi));
    CHECK(max_abs > std::ldexp(1.0, ehi - 1));
    CHECK(*exps.rbegin() == ehi - 1);       // the top binade below 2^hi is reached
    CHECK(*exps.begin() <= elo - 1);        // and the bottom scale too
  }
}

TEST_CASE("specials recipe at density 1 plants every special class", "[values]") {
  for (DType t : kTypes) {
    INFO(name(t));
    RecipeParams p = params(Recipe::specials);
    p.density = 1.0;
    bool pos_zero = false, neg_zero = false, pos_inf = false, neg_inf = false, nan = false;
    bool pos_sub = false, neg_sub = false;
    int64_t ordinary = 0;
    const double min_normal = std::ldexp(1.0, min_normal_exp(t));
    for (uint64_t i = 0; i < 2000; ++i) {
      double v = decode(t, recipe_bits(p, t, 3, 0, i, 0));
      if (std::isnan(v)) nan = true;
      else if (v == 0) (std::signbit(v) ? neg_zero : pos_zero) = true;
      else if (std::isinf(v)) (v > 0 ? pos_inf : neg_inf) = true;
      else if (std::fabs(v) < min_normal) (v > 0 ? pos_sub : neg_sub) = true;
      else ++ordinary;
    }
    CHECK(pos_zero);
    CHECK(neg_zero);
    CHECK(pos_inf);
    CHECK(neg_inf);
    CHECK(nan);
    CHECK(pos_sub);  // subnormal of the dtype itself: survives rounding to t, nonzero
    CHECK(neg_sub);
    CHECK(ordinary == 0);
  }
  SECTION("at a low density the specials are about that rare") {
    RecipeParams p = params(Recipe::specials);
    p.density = 0.05;
    int64_t special = 0;
    const int N = 100000;
    for (int i = 0; i < N; ++i) {
      double v = recipe_value(p, DType::f32, 8, 1, uint64_t(i), 0);
      special += !std::isfinite(v) || v == 0 || std::fabs(v) < std::ldexp(1.0, -126);
    }
    CHECK(double(special) / N == Approx(0.05).margin(0.005));
  }
}

TEST_CASE("gemm ints recipe params keep the exact sum below the output's mantissa", "[values]") {
  struct Shape {
    int64_t k;
    DType in, out;
  };
  HostBackend be;
  for (Shape s : {Shape{64, DType::f16, DType::f16}, Shape{1024, DType::f16, DType::f16},
                  Shape{4096, DType::f32, DType::f32}, Shape{65536, DType::f32, DType::f32},
                  Shape{100, DType::bf16, DType::bf16}, Shape{2000, DType::bf16, DType::bf16},
                  Shape{3000, DType::f16, DType::f32}}) {
    INFO("k=" << s.k << " A,B " << name(s.in) << " C " << name(s.out));
    gemm::Problem c;
    c.m = 8, c.n = 9, c.k = s.k;
    c.a_type = c.b_type = s.in, c.c_type = s.out;
    c.a = gemm::make_layout(c.m, c.k, false, 3, 1);
    c.b = gemm::make_layout(c.k, c.n, true);
    c.c = gemm::make_layout(c.m, c.n, false);
    c.recipe = Recipe::ints;
    c.seed = 12345 + uint64_t(s.k);
    auto g = gemm::tensors(c);
    // A and B drawn exactly as the executor draws them
    std::vector<std::vector<int64_t>> vals(2);
    int64_t bad_values = 0;  // not an integer in [-3, 3]
    for (int w : {gemm::A, gemm::B}) {
      const TensorGeom& geom = g[w];
      Buffer buf = be.allocate(size_t(geom.span()) * dtype_bytes(geom.dtype));
      be.fill_tensor(buf, geom, gemm::recipe_params(c, gemm::Operand(w)), c.seed, uint32_t(w));
      vals[w].resize(size_t(geom.count()));
      for (int64_t r = 0; r < geom.rows(); ++r)
        for (int64_t col = 0; col < geom.cols(); ++col) {
          double v = decode(geom.dtype, load_bits(geom.dtype, buf.data + geom.index(r, col) * dtype_bytes(geom.dtype)));
          if (v != std::trunc(v) || std::fabs(v) > 3) ++bad_values;
          vals[w][size_t(r * geom.cols() + col)] = int64_t(v);
        }
      be.release(buf);
    }
    CHECK(bad_values == 0);
    const int64_t limit = int64_t(1) << mantissa_bits(s.out);
    int64_t below = 0, nonzero = 0, largest = 0;
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        int64_t sum = 0;  // exact: integers
        for (int64_t p = 0; p < c.k; ++p)
          sum += std::abs(vals[0][size_t(i * c.k + p)]) * std::abs(vals[1][size_t(p * c.n + j)]);
        below += sum < limit;
        nonzero += sum != 0;
        largest = std::max(largest, sum);
      }
    INFO("largest sum of |a||b| " << largest << ", limit " << limit);
    CHECK(double(below) >= 0.95 * double(c.m * c.n));
    // and the values are not trivially small: most dot products are nonzero
    CHECK(double(nonzero) >= 0.5 * double(c.m * c.n));
  }
}

TEST_CASE("keep: kept elements keep their value, the others are zero", "[values]") {
  RecipeParams p = params(Recipe::uniform);
  RecipeParams listed = p, masked = p;
  listed.keep.listed = 2, listed.keep.at[0] = keep_position(1, 2), listed.keep.at[1] = keep_position(7, 0);
  masked.keep.lo = 0.5, masked.keep.hi = 0.75;
  int64_t kept = 0;
  for (uint64_t r = 0; r < 40; ++r)
    for (uint64_t c = 0; c < 50; ++c) {
      const double v = recipe_value(p, DType::f32, 3, 1, r, c);
      const bool in_list = (r == 1 && c == 2) || (r == 7 && c == 0);
      CHECK(recipe_value(listed, DType::f32, 3, 1, r, c) == (in_list ? v : 0.0));
      // The mask depends on the position only: the same for another fill seed.
      const bool k = keeps(masked.keep, 1, r, c);
      CHECK(recipe_value(masked, DType::f32, 3, 1, r, c) == (k ? v : 0.0));
      CHECK(recipe_value(masked, DType::f32, 4, 1, r, c) == (k ? recipe_value(p, DType::f32, 4, 1, r, c) : 0.0));
      kept += k;
    }
  CHECK(kept > 400);  // about a quarter of 2000
  CHECK(kept < 600);
}

TEST_CASE("keep: the executor's fills honour the case's keep modifier", "[values]") {
  HostBackend be;
  gemm::Problem c;
  c.m = 5, c.n = 4, c.k = 6;
  c.a = gemm::make_layout(c.m, c.k, true, 2, 1);
  c.recipe = Recipe::ints, c.seed = 77;
  c.keep[gemm::A].listed = 1, c.keep[gemm::A].at[0] = keep_position(4, 5);
  const TensorGeom geom = gemm::tensors(c)[gemm::A];
  Buffer buf = be.allocate(size_t(geom.span()) * dtype_bytes(geom.dtype));
  be.fill_tensor(buf, geom, gemm::recipe_params(c, gemm::A), c.seed, gemm::A);
  int nonzero = 0;
  for (int64_t r = 0; r < geom.rows(); ++r)
    for (int64_t col = 0; col < geom.cols(); ++col)
      nonzero += decode(geom.dtype, load_bits(geom.dtype, buf.data + geom.index(r, col) * dtype_bytes(geom.dtype))) != 0;
  CHECK(nonzero == 1);
  CHECK(decode(geom.dtype, load_bits(geom.dtype, buf.data + geom.index(4, 5) * dtype_bytes(geom.dtype))) != 0);
  be.release(buf);
}

TEST_CASE("broadcast: a stride-0 element holds its first copy's draw, on every backend", "[values]") {
  HostBackend be;
  // [3, 4] with the rows broadcast: four distinct elements, each the draw of row 0.
  TensorGeom g = TensorGeom::matrix(DType::f32, 3, 4, 0, 1, 2);
  CHECK(g.broadcasts());
  CHECK_FALSE(g.overlaps());
  CHECK(g.representative(0, 3));
  CHECK_FALSE(g.representative(2, 3));
  Buffer buf = be.allocate(size_t(g.span()) * 4);
  be.fill_tensor(buf, g, params(Recipe::uniform), 99, 1);
  for (int64_t c = 0; c < 4; ++c)
    CHECK(load_bits(DType::f32, buf.data + g.index(2, c) * 4) ==
          recipe_bits(params(Recipe::uniform), DType::f32, 99, 1, 0, c));
  be.release(buf);
  // Overlaps that no broadcast explains.
  CHECK(TensorGeom::matrix(DType::f32, 3, 4, 3, 1, 0).overlaps());
  CHECK(TensorGeom::matrix(DType::f32, 3, 4, 1, 1, 0).overlaps());
  CHECK(TensorGeom::matrix(DType::f32, 4, 3, 1, 3, 0).overlaps());  // column-major with ld 3 < 4 rows
  CHECK_FALSE(TensorGeom::matrix(DType::f32, 4, 3, 1, 4, 0).overlaps());
  CHECK_FALSE(TensorGeom::matrix(DType::f32, 3, 4, 5, 1, 0).overlaps());
  CHECK_FALSE(TensorGeom::matrix(DType::f32, 1, 4, 1, 1, 0).overlaps());  // one row: its stride never used
  CHECK_FALSE(TensorGeom::matrix(DType::f32, 3, 4, INT64_MAX / 2, 1 << 30, 0).overlaps());
}

// The sparse-change call made in place (Backend::fill_patched): a buffer
// holding the unpatched draw, given the patch, equals the patched draw
// whole, byte for byte, whatever the patch covers (a row, listed positions,
// some outside the tensor) and however the tensor lies.
TEST_CASE("fill_patched: the patched elements written in place equal the whole patched fill", "[values]") {
  HostBackend be;
  const TensorGeom geoms[] = {
      TensorGeom::matrix(DType::f32, 6, 5, 5, 1, 0),  // compact
      TensorGeom::matrix(DType::f16, 6, 5, 1, 9, 3),  // column-major, padded, offset
      TensorGeom::matrix(DType::f32, 6, 5, 0, 1, 2),  // rows broadcast
  };
  RecipeParams row = params(Recipe::ints);
  row.patch.seed = 7, row.patch.row = 3;
  RecipeParams listed = params(Recipe::uniform);
  listed.patch.seed = 11, listed.patch.listed = 3;
  listed.patch.at[0] = keep_position(0, 4), listed.patch.at[1] = keep_position(5, 0);
  listed.patch.at[2] = keep_position(9, 1);  // outside: written nowhere
  for (const TensorGeom& g : geoms)
    for (const RecipeParams& patched : {row, listed}) {
      RecipeParams plain = patched;
      plain.patch = Patch{};
      const size_t bytes = size_t(g.span()) * dtype_bytes(g.dtype);
      Buffer in_place = be.allocate(bytes), whole = be.allocate(bytes);
      be.fill_pattern(in_place, 0x5a, 1), be.fill_pattern(whole, 0x5a, 1);  // the gaps as well
      be.fill_tensor(in_place, g, plain, 42, 1);
      be.fill_patched(in_place, g, patched, 42, 1);
      be.fill_tensor(whole, g, patched, 42, 1);
      CHECK_FALSE(be.first_difference(in_place, whole));
      be.fill_tensor(whole, g, plain, 42, 1);
      // The patch changed something, but for a broadcast copy's row (its memory is row 0's).
      CHECK(bool(be.first_difference(in_place, whole)) == !(g.broadcasts() && patched.patch.row > 0));
      be.release(in_place), be.release(whole);
    }
}

TEST_CASE("dense: a tensor whose elements fill its span with no gap", "[values]") {
  CHECK(TensorGeom::matrix(DType::f32, 3, 4, 4, 1, 0).dense());
  CHECK(TensorGeom::matrix(DType::f32, 3, 4, 4, 1, 7).dense());   // an offset is before the span's elements
  CHECK(TensorGeom::matrix(DType::f32, 3, 4, 1, 3, 0).dense());   // column-major
  CHECK_FALSE(TensorGeom::matrix(DType::f32, 3, 4, 5, 1, 0).dense());  // padded rows
  CHECK_FALSE(TensorGeom::matrix(DType::f32, 3, 4, 0, 1, 0).dense());  // broadcast
  CHECK_FALSE(TensorGeom::matrix(DType::f32, 3, 4, 4, 2, 0).dense());  // every other element
  CHECK_FALSE(TensorGeom::matrix(DType::f32, 0, 4, 4, 1, 0).dense());  // no elements
}

// The sparse-change call (docs/cases.md): a patch changes exactly the
// elements it covers, to other stored bits, and nothing else.
TEST_CASE("patch: covered kept elements get other bits, every other element keeps its value", "[values]") {
  int changed_zero = 0;  // kept elements the ints density drew as 0 change too
  for (Recipe r : {Recipe::ints, Recipe::uniform, Recipe::mixed, Recipe::specials})
    for (DType t : kTypes) {
      INFO(name(r) << " " << name(t));
      RecipeParams p = params(r);
      p.density = r == Recipe::ints ? 0.05 : 0.25, p.exp_lo = -8, p.exp_hi = 8;
      p.keep.lo = 0.0, p.keep.hi = 0.5;  // half the elements cut to 0: a patch leaves those at 0
      RecipeParams q = p;
      q.patch.seed = 99;
      q.patch.listed = 3;
      q.patch.at[0] = keep_position(0, 0), q.patch.at[1] = keep_position(7, 3), q.patch.at[2] = keep_position(2, 9);
      RecipeParams row = p;
      row.patch.seed = 5, row.patch.row = 4;
      for (uint64_t i = 0; i < 10; ++i)
        for (uint64_t j = 0; j < 10; ++j) {
          const uint64_t before = recipe_bits(p, t, 42, 1, i, j);
          const bool listed = (i == 0 && j == 0) || (i == 7 && j == 3) || (i == 2 && j == 9);
          const bool kept = keeps(p.keep, 1, i, j);
          CHECK((recipe_bits(q, t, 42, 1, i, j) != before) == (listed && kept));
          CHECK((recipe_bits(row, t, 42, 1, i, j) != before) == (i == 4 && kept));
          changed_zero += (listed || i == 4) && kept && before == encode(t, 0.0);
        }
    }
  CHECK(changed_zero > 0);
}

TEST_CASE("rotation: each element draws its source's value, keep moving with it, the patch staying put", "[values]") {
  for (Recipe r : {Recipe::ints, Recipe::uniform, Recipe::specials})
    for (DType t : {DType::f32, DType::bf16}) {
      INFO(name(r) << " " << name(t));
      RecipeParams p = params(r);
      p.density = 0.25;
      p.keep.lo = 0.0, p.keep.hi = 0.6;
      RecipeParams moved = p;
      moved.rotation = Rotation{3, 5, 7, 9};
      RecipeParams patched = moved;
      patched.patch.seed = 11, patched.patch.listed = 1, patched.patch.at[0] = keep_position(6, 8);
      int differ = 0;
      for (uint64_t i = 0; i < 7; ++i)
        for (uint64_t j = 0; j < 9; ++j) {
          const uint64_t from = recipe_bits(p, t, 42, 1, (i + 3) % 7, (j + 5) % 9);
          CHECK(recipe_bits(moved, t, 42, 1, i, j) == from);
          differ += recipe_bits(p, t, 42, 1, i, j) != from;
          // The patch is where it says, kept where the moved value is kept.
          const bool covered = i == 6 && j == 8 && keeps(p.keep, 1, (i + 3) % 7, (j + 5) % 9);
          CHECK((recipe_bits(patched, t, 42, 1, i, j) != from) == covered);
        }
      CHECK(differ > 0);
    }
  CHECK_FALSE(Rotation{}.any());
  CHECK(Rotation{0, 1, 1, 2}.any());
}

TEST_CASE("sparse_change: one tensor the result reads, positions inside it that vary with the seed", "[values]") {
  std::set<uint64_t> positions;
  int kinds[3] = {0, 0, 0};
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    gemm::Problem c;
    c.m = 9, c.n = 5, c.k = 7, c.beta = seed % 2 ? 1.0 : 0.0, c.seed = seed;
    c.a = gemm::make_layout(c.m, c.k, false), c.b = gemm::make_layout(c.k, c.n, false);
    c.c = gemm::make_layout(c.m, c.n, false);
    const SparseChange s = gemm::sparse_change(c);
    REQUIRE(s.tensor >= 0);
    if (c.beta == 0) CHECK(s.tensor != gemm::C);
    const TensorGeom g = gemm::tensors(c)[s.tensor];
    CHECK(s.patch.any());
    if (s.patch.row >= 0) {
      CHECK(s.patch.row < g.rows());
      ++kinds[1];
      continue;
    }
    CHECK(s.patch.listed >= 1);
    CHECK(s.patch.listed <= Patch::kMaxListed);
    ++kinds[s.patch.listed == 1 ? 0 : 2];
    for (int i = 0; i < s.patch.listed; ++i) {
      CHECK(int64_t(s.patch.at[i] >> 32) < g.rows());
      CHECK(int64_t(s.patch.at[i] & 0xffffffffu) < g.cols());
      positions.insert(s.patch.at[i] | uint64_t(s.tensor) << 62);
    }
  }
  for (int k : kinds) CHECK(k > 50);  // one element, one row, scattered: each about a third
  CHECK(positions.size() > 100);      // not a fixed set of positions
  // Nothing the result reads: no change to make.
  gemm::Problem none;
  none.m = 3, none.n = 3, none.k = 3, none.alpha = 0, none.beta = 0;
  CHECK(gemm::sparse_change(none).tensor < 0);
}
