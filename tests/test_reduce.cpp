// The reduce family: the FP64 reference against hand-computed values and the
// NaN, tie and empty-row rules, the tolerance on right and planted-wrong
// results, spec keys and case checks, the sweep and codec, and every host
// zoo kernel through the gate.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "case/rng.h"
#include "case/values.h"
#include "core/error.h"
#include "exec/patterns.h"
#include "ops/op.h"
#include "ops/reduce/reduce_reference.h"
#include "ops/reduce/reduce_sweep.h"
#include "ops/reduce/reduce_tolerance.h"
#include "zoo_checks.h"
#include "spec/spec.h"

using namespace assay;
using namespace assay::reduce;

namespace {

const double kNaN = NAN, kInf = INFINITY;

// rows x n f32 values, compact.
struct Rows {
  int64_t rows, n;
  std::vector<float> data;
  TensorGeom geom() const { return TensorGeom::matrix(DType::f32, rows, n, n, 1, 0); }
  const std::byte* bytes() const { return reinterpret_cast<const std::byte*>(data.data()); }
};

Settings settings(Reduction op, bool propagate = false, bool ties_any = false) { return Settings{op, propagate, ties_any}; }

struct Result {
  std::vector<double> ref, bound;
};
Result reference_of(const Rows& x, const Settings& s, Compute compute = Compute::f32, const double* got = nullptr) {
  Result r;
  r.ref.resize(size_t(x.rows)), r.bound.resize(size_t(x.rows));
  reference_host(x.bytes(), x.geom(), error_model(s, compute, DType::f32, Subnormals::ieee), 0, x.rows, got,
                 r.ref.data(), r.bound.data());
  return r;
}

// A candidate's output (one value per row) judged against the reference.
template <class T>
CompareStats judge(const Rows& x, const std::vector<T>& y, const Settings& s, DType yt,
                   Compute compute = Compute::f32) {
  std::vector<double> got;
  for (T v : y) got.push_back(double(v));
  const Result r = reference_of(x, s, compute, got.data());
  const Tolerance tol = tolerance(yt, kDefaultScale, Subnormals::ieee);
  const TensorGeom gy = [&] {
    TensorGeom g;
    g.dtype = yt, g.ndim = 1, g.shape[0] = x.rows, g.strides[0] = 1;
    return g;
  }();
  return compare(tol, gy, reinterpret_cast<const std::byte*>(y.data()), r.ref.data(), r.bound.data());
}

Rows offset_row(int64_t n, uint64_t seed) {  // [-3, -1): same sign, as the offset recipe draws
  Rows x{1, n, std::vector<float>(size_t(n))};
  uint64_t h = seed;
  for (float& v : x.data) v = float(-2.0 + (2.0 * unit_double(h = mix64(h)) - 1.0));
  return x;
}

// f32 value rounded to f16 (an f16 accumulator's partial sums).
float to_f16(float v) { return float(round_to(DType::f16, double(v))); }

}  // namespace

TEST_CASE("reduce reference matches hand-computed values", "[reduce]") {
  const Rows x{2, 4, {3.0f, -1.0f, 3.0f, 2.5f, -0.5f, -7.0f, 1.0f, -7.0f}};
  auto ref = [&](Reduction op) { return reference_of(x, settings(op)).ref; };
  CHECK(ref(Reduction::sum) == std::vector<double>{7.5, -13.5});
  CHECK(ref(Reduction::mean) == std::vector<double>{7.5 / 4, -13.5 / 4});
  CHECK(ref(Reduction::max) == std::vector<double>{3.0, 1.0});
  CHECK(ref(Reduction::min) == std::vector<double>{-1.0, -7.0});
  CHECK(ref(Reduction::argmax) == std::vector<double>{0, 2});  // tie 0 / 2: the lowest
  CHECK(ref(Reduction::argmin) == std::vector<double>{1, 1});  // tie 1 / 3: the lowest
  // max, min and arg are exact (bound 0); the sum's bound is gamma_3 * sum|x|.
  CHECK(reference_of(x, settings(Reduction::max)).bound[0] == 0.0);
  const double u = std::ldexp(1.0, -24);
  CHECK(reference_of(x, settings(Reduction::sum)).bound[0] == Approx(3 * u * 9.5).epsilon(1e-6));
  const Rows ints{1, 3, {3.0f, -1.0f, 2.0f}};
  CHECK(reference_of(ints, settings(Reduction::sum)).bound[0] == 0.0);  // integers: exact in any order
}

TEST_CASE("reduce reference: NaN, Inf, ties and empty rows", "[reduce]") {
  // [NaN, 1, 5, NaN], [2, 2, -inf, 2], [NaN, NaN]-like via n = 2 rows below.
  const Rows x{2, 4, {float(kNaN), 1.0f, 5.0f, float(kNaN), 2.0f, 2.0f, float(-kInf), 2.0f}};
  auto ref = [&](Reduction op, bool propagate) { return reference_of(x, settings(op, propagate)).ref; };
  CHECK(ref(Reduction::max, false)[0] == 5.0);  // ieee: NaN skipped
  CHECK(std::isnan(ref(Reduction::max, true)[0]));  // propagate
  CHECK(ref(Reduction::argmax, false)[0] == 2.0);
  CHECK(ref(Reduction::argmax, true)[0] == 0.0);  // the first NaN
  CHECK(ref(Reduction::argmin, false)[1] == 2.0);  // -inf at 2
  CHECK(ref(Reduction::min, false)[1] == -kInf);
  CHECK(std::isnan(ref(Reduction::sum, false)[0]));
  CHECK(ref(Reduction::sum, false)[1] == -kInf);
  const Rows nan_row{1, 3, {float(kNaN), float(kNaN), float(kNaN)}};
  CHECK(std::isnan(reference_of(nan_row, settings(Reduction::max)).ref[0]));  // all NaN: NaN
  CHECK(reference_of(nan_row, settings(Reduction::argmax)).ref[0] == 0.0);    // ... index 0
  const Rows inf_row{1, 2, {float(kInf), float(-kInf)}};
  CHECK(std::isnan(reference_of(inf_row, settings(Reduction::sum)).ref[0]));  // inf - inf
  // n = 0: sum 0, mean NaN.
  const Rows empty{3, 0, {}};
  CHECK(reference_of(empty, settings(Reduction::sum)).ref == std::vector<double>{0, 0, 0});
  CHECK(std::isnan(reference_of(empty, settings(Reduction::mean)).ref[0]));
  // ties: any takes the kernel's index where it holds the extreme, not elsewhere.
  const Rows tie{1, 4, {4.0f, 1.0f, 4.0f, 4.0f}};
  const double last = 3, wrong = 1;
  CHECK(reference_of(tie, settings(Reduction::argmax, false, true), Compute::f32, &last).ref[0] == 3.0);
  CHECK(reference_of(tie, settings(Reduction::argmax, false, true), Compute::f32, &wrong).ref[0] == 0.0);
  CHECK(reference_of(tie, settings(Reduction::argmax, false, false), Compute::f32, &last).ref[0] == 0.0);
}

TEST_CASE("reduce tolerance: right results pass, planted errors fail", "[reduce]") {
  // A sequential f32 sum of 70,001 same-sign values passes; an f16
  // accumulator over the same row fails (it stalls, then overflows).
  const Rows x = offset_row(70001, 5);
  float seq = 0.0f, half = 0.0f;
  for (float v : x.data) seq += v, half = to_f16(half + to_f16(v));
  CHECK(verdict_of(judge(x, std::vector<float>{seq}, settings(Reduction::sum), DType::f32)) == Verdict::pass);
  CHECK(verdict_of(judge(x, std::vector<float>{half}, settings(Reduction::sum), DType::f32)) != Verdict::pass);
  // Pairwise (any order) passes too; dropping the last element fails.
  float a = 0, b = 0;
  for (size_t i = 0; i < x.data.size(); ++i) (i % 2 ? a : b) += x.data[i];
  CHECK(verdict_of(judge(x, std::vector<float>{a + b}, settings(Reduction::sum), DType::f32)) == Verdict::pass);
  // A dropped element is past the bound at n = 1000 (T gamma A ~ 0.24 against
  // |x| >= 1); at n = 70,001 the worst-case bound (~1.2e3) cannot see one.
  const Rows k = offset_row(1000, 9);
  float all = 0, dropped = 0;
  for (size_t i = 0; i < k.data.size(); ++i) all += k.data[i], dropped += i + 1 < k.data.size() ? k.data[i] : 0.0f;
  CHECK(verdict_of(judge(k, std::vector<float>{all}, settings(Reduction::sum), DType::f32)) == Verdict::pass);
  CHECK(verdict_of(judge(k, std::vector<float>{dropped}, settings(Reduction::sum), DType::f32)) == Verdict::mismatch);
  // The bound for a sum is gamma_{n-1} sum|x|: a sum off by twice that fails.
  const Rows u{1, 1000, std::vector<float>(1000, 0.1f)};
  const Result r = reference_of(u, settings(Reduction::sum));
  CHECK(r.bound[0] > 0);
  CHECK(verdict_of(judge(u, std::vector<float>{float(r.ref[0] + 2.5 * kDefaultScale * r.bound[0])},
                         settings(Reduction::sum), DType::f32)) == Verdict::mismatch);
  // Integer rows are exact: one off fails.
  const Rows ints{1, 5, {1, 2, 3, -3, 2}};
  CHECK(verdict_of(judge(ints, std::vector<float>{5.0f}, settings(Reduction::sum), DType::f32)) == Verdict::pass);
  CHECK(verdict_of(judge(ints, std::vector<float>{std::nextafter(5.0f, 6.0f)}, settings(Reduction::sum),
                         DType::f32)) == Verdict::mismatch);
  // mean by n - 1 fails.
  CHECK(verdict_of(judge(ints, std::vector<float>{5.0f / 4}, settings(Reduction::mean), DType::f32)) ==
        Verdict::mismatch);
  CHECK(verdict_of(judge(ints, std::vector<float>{5.0f / 5}, settings(Reduction::mean), DType::f32)) == Verdict::pass);
  // max is exact: one ulp off fails; a max started at 0 fails on a negative row.
  const Rows neg{1, 3, {-2.0f, -0.5f, -1.0f}};
  CHECK(verdict_of(judge(neg, std::vector<float>{-0.5f}, settings(Reduction::max), DType::f32)) == Verdict::pass);
  CHECK(verdict_of(judge(neg, std::vector<float>{std::nextafter(-0.5f, 0.0f)}, settings(Reduction::max),
                         DType::f32)) == Verdict::mismatch);
  CHECK(verdict_of(judge(neg, std::vector<float>{0.0f}, settings(Reduction::max), DType::f32)) == Verdict::mismatch);
  // NaN: fmax under propagate is a class error, and so is a propagated NaN under ieee.
  const Rows nan_end{1, 3, {1.0f, 2.0f, float(kNaN)}};
  CHECK(verdict_of(judge(nan_end, std::vector<float>{2.0f}, settings(Reduction::max, true), DType::f32)) ==
        Verdict::nan_mismatch);
  CHECK(verdict_of(judge(nan_end, std::vector<float>{float(kNaN)}, settings(Reduction::max), DType::f32)) ==
        Verdict::nan_mismatch);
  // argmax: the highest tie fails under ties: lowest, passes under ties: any.
  const Rows tie{1, 4, {4.0f, 1.0f, 4.0f, 0.0f}};
  CHECK(verdict_of(judge(tie, std::vector<int64_t>{2}, settings(Reduction::argmax), DType::i64)) == Verdict::mismatch);
  CHECK(verdict_of(judge(tie, std::vector<int64_t>{2}, settings(Reduction::argmax, false, true), DType::i64)) ==
        Verdict::pass);
  CHECK(verdict_of(judge(tie, std::vector<int64_t>{1}, settings(Reduction::argmax, false, true), DType::i64)) ==
        Verdict::mismatch);
  CHECK(verdict_of(judge(tie, std::vector<int64_t>{7}, settings(Reduction::argmax, false, true), DType::i64)) ==
        Verdict::mismatch);
  // An unwritten index keeps the poison.
  CHECK(verdict_of(judge(tie, std::vector<int64_t>{int64_t(poison_bits(DType::i64))}, settings(Reduction::argmax),
                         DType::i64)) == Verdict::unwritten_output);
}

TEST_CASE("reduce spec keys and case checks", "[reduce]") {
  auto spec_text = [](const std::string& extra, const std::string& dtypes = "{x: f32, y: f32}") {
    return "name: k\nop: reduce\nbackend: host\nsource: k.cpp\ncompute: f32\ndtypes: " + dtypes + "\n" + extra;
  };
  const auto dir = std::filesystem::temp_directory_path() / "assay-reduce-spec";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "k.cpp") << "\n";
  const auto file = dir / "k.yaml";
  CHECK_NOTHROW(parse_spec(spec_text("reduce: sum\n"), file));
  CHECK_NOTHROW(parse_spec(spec_text("reduce: max\nnan: propagate\n"), file));
  CHECK_NOTHROW(parse_spec(spec_text("reduce: argmax\nties: any\nnan: ieee\n", "{x: f16, y: i64}"), file));
  CHECK_THROWS_WITH(parse_spec(spec_text(""), file), Catch::Contains("reduce"));
  CHECK_THROWS_WITH(parse_spec(spec_text("reduce: product\n"), file), Catch::Contains("reduce"));
  CHECK_THROWS_WITH(parse_spec(spec_text("reduce: sum\nnan: propagate\n"), file), Catch::Contains("nan"));
  CHECK_THROWS_WITH(parse_spec(spec_text("reduce: max\nties: any\n"), file), Catch::Contains("ties"));
  CHECK_THROWS_WITH(parse_spec(spec_text("reduce: max\nnan: maybe\n"), file), Catch::Contains("nan"));
  CHECK_THROWS_WITH(parse_spec(spec_text("reduce: argmax\n"), file), Catch::Contains("i64"));
  CHECK_THROWS_WITH(parse_spec(spec_text("reduce: sum\n", "{x: f32, y: i64}"), file), Catch::Contains("float"));
  CHECK_THROWS_WITH(parse_spec(spec_text("reduce: sum\ncompute: tf32\n"), file), Catch::Contains("compute"));
  CHECK_THROWS_WITH(parse_spec(spec_text("reduce: sum\nalpha: 1\n"), file), Catch::Contains("alpha"));

  // Case checks: y's shape, n = 0 for max, y's dtype for argmax.
  Spec spec = parse_spec(spec_text("reduce: max\n"), file);
  const Op& op = op_of(spec);
  Parts p = plain_parts(spec, settings(Reduction::max), rows::Shape{false, 1, 4, 5}, "test");
  Case c = make_case(p);
  CHECK_NOTHROW(op.validate(c));
  Case wrong = c;
  wrong.tensors[Y].shape = {4, 5};
  wrong.tensors[Y].strides = {5, 1};
  CHECK_THROWS_AS(op.validate(wrong), InputError);
  p.shape.n = 0;
  CHECK_THROWS_WITH(op.validate(make_case(p)), Catch::Contains("empty row"));
  p.shape.n = 5, p.y_type = DType::i64;
  CHECK_THROWS_WITH(op.validate(make_case(p)), Catch::Contains("float"));
}

TEST_CASE("reduce sweep: row lengths, grid limits, layouts, planted specials and ties", "[reduce]") {
  Spec spec;
  spec.op = "reduce";
  const Op& op = op_of(spec);  // a spec built in code: sum, f32
  const auto cases = op.sweep(spec, 1, SweepTarget{BackendKind::host, 1e12});
  std::set<int64_t> ns;
  bool past_grid = false, transposed = false, batched = false, offset = false, strided_y = false;
  std::set<Recipe> recipes;
  for (const Case& c : cases) {
    op.validate(c);
    const rows::Shape s = rows::shape_of(c);
    ns.insert(s.n);
    recipes.insert(c.recipe);
    past_grid |= s.total_rows() > 65535;
    transposed |= c.tensors[X].strides.back() > 1;
    batched |= s.batched && c.tensors[X].strides[0] > s.rows * s.n;
    offset |= c.tensors[X].offset > 0 || c.tensors[Y].offset > 0;
    strided_y |= c.tensors[Y].strides.back() > 1;
  }
  for (int64_t n : rows::kRowLengths) CHECK(ns.count(n) == 1);
  CHECK(ns.count(rows::kPastWord) == 1);
  CHECK(ns.count(0) == 1);  // sum of empty rows
  CHECK(recipes.size() == std::size(kRecipes));
  CHECK(past_grid);
  CHECK(transposed);
  CHECK(batched);
  CHECK(offset);
  CHECK(strided_y);

  // specials: a NaN planted at the first, middle and last position of rows;
  // ints for argmax: the extreme at both ends of some rows.
  auto count_rows = [&](const Settings& s, Recipe r, auto&& pred) {
    Parts p = plain_parts(spec, s, rows::Shape{false, 1, 64, 33}, "test");
    p.recipe = r;
    const Case c = make_case(p);
    const RecipeParams rp = recipe_params(c, X, s, Compute::f32);
    int hits = 0;
    for (uint64_t row = 0; row < 64; ++row) {
      std::vector<double> v;
      for (uint64_t col = 0; col < 33; ++col) v.push_back(recipe_value(rp, DType::f32, 7, X, row, col));
      hits += pred(v);
    }
    return hits;
  };
  const Settings mx = settings(Reduction::max);
  CHECK(count_rows(mx, Recipe::specials, [](auto& v) { return std::isnan(v[0]) && !std::isnan(v[16]); }) > 3);
  CHECK(count_rows(mx, Recipe::specials, [](auto& v) { return std::isnan(v[16]) && !std::isnan(v[0]); }) > 3);
  CHECK(count_rows(mx, Recipe::specials, [](auto& v) { return std::isnan(v[32]) && !std::isnan(v[0]); }) > 3);
  const Settings am = settings(Reduction::argmax);
  CHECK(count_rows(am, Recipe::ints, [](auto& v) { return v[0] == 4 && v[32] == 4; }) > 3);
  CHECK(count_rows(am, Recipe::offset, [](auto& v) {
          return std::all_of(v.begin(), v.end(), [](double e) { return e < 0; });
        }) == 64);
}

TEST_CASE("reduce fuzz codec and shrink hooks keep cases valid", "[reduce]") {
  const auto dir = std::filesystem::temp_directory_path() / "assay-reduce-spec";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "k.cpp") << "\n";
  const Spec spec = parse_spec(
      "name: k\nop: reduce\nbackend: host\nsource: k.cpp\ncompute: f32\nreduce: argmax\ndtypes: {x: f32, y: i64}\n",
      dir / "k.yaml");
  testing::check_codec(op_of(spec), spec, 1, 500, 24, [](const Case& c, const Case&) {
    CHECK(rows::shape_of(c).n >= 1);  // argmax of an empty row has no value
  });
}

TEST_CASE("host reduce zoo kernels get their expected verdicts", "[reduce][samples]") {
  // Planted host bugs first fail by case 47; the zoo runs the correct ones longer.
  testing::check_host_zoo("reduce", testing::sample_gate_options(100), 16);
}
