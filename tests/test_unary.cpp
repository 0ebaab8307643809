// The unary family: the FP64 reference against hand-computed values and the
// IEEE rules, the tolerance model on correct algorithms' results and on
// planted errors, spec keys, the sweep and codec, and every host zoo kernel
// through the gate.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <vector>

#include "case/rng.h"
#include "core/error.h"
#include "exec/patterns.h"
#include "gate/gate.h"
#include "ops/op.h"
#include "ops/unary/unary_reference.h"
#include "ops/unary/unary_sweep.h"
#include "ops/unary/unary_tolerance.h"
#include "zoo_checks.h"
#include "spec/spec.h"

using namespace assay;
using namespace assay::unary;

namespace {

const double kInf = INFINITY, kNaN = NAN;

struct Result {
  std::vector<double> ref, bound;
};

Settings settings(Fn fn, Math math = Math::ieee) {
  Settings s;
  s.fn = fn, s.math = math;
  return s;
}

// One row of f32 values.
Result reference_of(const std::vector<float>& x, Settings s, Compute compute = Compute::f32) {
  Result r;
  r.ref.resize(x.size()), r.bound.resize(x.size());
  const TensorGeom g = TensorGeom::matrix(DType::f32, 1, int64_t(x.size()), int64_t(x.size()), 1, 0);
  reference_host(reinterpret_cast<const std::byte*>(x.data()), g, error_model(s, compute, DType::f32), r.ref.data(),
                 r.bound.data());
  return r;
}

// A candidate's f32 output judged against the reference.
CompareStats judge(const std::vector<float>& x, const std::vector<float>& y, Settings s,
                   Subnormals sub = Subnormals::ieee) {
  const Result r = reference_of(x, s);
  const Tolerance tol = tolerance(DType::f32, Compute::f32, kDefaultScale, sub);
  const TensorGeom g = TensorGeom::matrix(DType::f32, 1, int64_t(x.size()), int64_t(x.size()), 1, 0);
  return compare(tol, g, reinterpret_cast<const std::byte*>(y.data()), r.ref.data(), r.bound.data());
}

std::vector<float> map(const std::vector<float>& x, const std::function<float(float)>& f) {
  std::vector<float> y;
  for (float v : x) y.push_back(f(v));
  return y;
}

// The band where gelu and gelu_tanh differ, and the wide range of mixed values.
std::vector<float> band() {
  std::vector<float> x;
  for (int i = 0; i < 2000; ++i) x.push_back(-4.0f + 8.0f * float(i) / 2000.0f);
  return x;
}
std::vector<float> wide() {
  std::vector<float> x;
  for (int i = 0; i < 4000; ++i) x.push_back(float(std::sin(i * 0.61) * std::ldexp(1.0, i % 18 - 10)));
  return x;
}

float gelu_erf(float v) { return v * 0.5f * (1.0f + std::erf(v * 0.70710678f)); }
float gelu_tanh_f(float v) { return 0.5f * v * (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v))); }
float fast_exp(float a) { return std::exp2(a * 1.44269504f); }  // __expf as the zoo emulates it

}  // namespace

TEST_CASE("unary reference matches hand-computed values", "[unary]") {
  const std::vector<float> x{-2.0f, -0.5f, 0.0f, 1.0f, 3.0f};
  const Result relu = reference_of(x, settings(Fn::relu));
  CHECK(relu.ref == std::vector<double>{0, 0, 0, 1, 3});
  for (double b : relu.bound) CHECK(b == 0);  // exact
  const Result g = reference_of(x, settings(Fn::gelu));
  // gelu(x) = x Phi(x): Phi(1) = 0.841344746068543, Phi(-2) = 0.0227501319481792.
  CHECK(g.ref[3] == Approx(0.841344746068543).epsilon(1e-14));
  CHECK(g.ref[0] == Approx(-2.0 * 0.0227501319481792).epsilon(1e-13));
  CHECK(g.ref[2] == 0.0);
  const Result gt = reference_of(x, settings(Fn::gelu_tanh));
  // 0.5 (1 + tanh(sqrt(2/pi) (1 + 0.044715))) = 0.8411919906...
  CHECK(gt.ref[3] == Approx(0.5 * (1 + std::tanh(0.7978845608028654 * 1.044715))).epsilon(1e-14));
  CHECK(std::fabs(gt.ref[3] - g.ref[3]) > 1e-4);
  const Result si = reference_of(x, settings(Fn::silu));
  CHECK(si.ref[3] == Approx(1.0 / (1.0 + std::exp(-1.0))).epsilon(1e-15));
  const Result sg = reference_of(x, settings(Fn::sigmoid));
  CHECK(sg.ref[2] == 0.5);
  CHECK(sg.ref[4] == Approx(1.0 / (1.0 + std::exp(-3.0))).epsilon(1e-15));
  CHECK(reference_of(x, settings(Fn::exp)).ref[3] == Approx(std::exp(1.0)).epsilon(1e-15));
  CHECK(reference_of(x, settings(Fn::tanh)).ref[1] == Approx(std::tanh(-0.5)).epsilon(1e-15));
  // Far in the negative tail, gelu keeps its digits (erfc, not 1 + erf).
  const Result tail = reference_of({-10.0f}, settings(Fn::gelu));
  CHECK(tail.ref[0] == Approx(-10.0 * 7.61985302416047e-24).epsilon(1e-10));
}

TEST_CASE("unary reference: NaN, +-Inf and -0", "[unary]") {
  const float nan = NAN, inf = INFINITY;
  const std::vector<float> x{nan, inf, -inf, -0.0f};
  auto r = [&](Fn f) { return reference_of(x, settings(f)).ref; };
  for (Fn f : {Fn::relu, Fn::gelu, Fn::gelu_tanh, Fn::silu, Fn::sigmoid, Fn::exp, Fn::tanh})
    CHECK(std::isnan(r(f)[0]));  // NaN in, NaN out
  CHECK(r(Fn::relu)[1] == kInf);
  CHECK(r(Fn::relu)[2] == 0.0);
  CHECK(r(Fn::relu)[3] == 0.0);
  CHECK(r(Fn::exp)[1] == kInf);
  CHECK(r(Fn::exp)[2] == 0.0);
  CHECK(r(Fn::sigmoid)[1] == 1.0);
  CHECK(r(Fn::sigmoid)[2] == 0.0);
  CHECK(r(Fn::tanh)[1] == 1.0);
  CHECK(r(Fn::tanh)[2] == -1.0);
  CHECK(r(Fn::silu)[1] == kInf);
  CHECK(std::isnan(r(Fn::silu)[2]));  // -inf * sigmoid(-inf) = -inf * 0 (torch)
  CHECK(r(Fn::gelu)[1] == kInf);
  CHECK(std::isnan(r(Fn::gelu)[2]));
  CHECK(std::isnan(r(Fn::gelu_tanh)[2]));
}

TEST_CASE("unary tolerance: correct algorithms pass", "[unary]") {
  const std::vector<float> b = band(), w = wide();
  SECTION("correctly rounded results pass for every fn") {
    for (Fn f : {Fn::relu, Fn::gelu, Fn::gelu_tanh, Fn::silu, Fn::sigmoid, Fn::exp, Fn::tanh}) {
      const Result r = reference_of(w, settings(f));
      std::vector<float> y(r.ref.begin(), r.ref.end());
      INFO(fn_name(f));
      CHECK(verdict_of(judge(w, y, settings(f))) == Verdict::pass);
    }
  }
  SECTION("glibc f32 formulas pass, cancellation and overflow included") {
    for (const auto* x : {&b, &w}) {
      CHECK(verdict_of(judge(*x, map(*x, gelu_erf), settings(Fn::gelu))) == Verdict::pass);
      CHECK(verdict_of(judge(*x, map(*x, gelu_tanh_f), settings(Fn::gelu_tanh))) == Verdict::pass);
      // gelu_tanh as x * sigmoid(2a), the identity some kernels use.
      auto gelu_sig = [](float v) {
        const float a = 0.7978845608f * (v + 0.044715f * v * v * v);
        return v / (1.0f + std::exp(-2.0f * a));
      };
      CHECK(verdict_of(judge(*x, map(*x, gelu_sig), settings(Fn::gelu_tanh))) == Verdict::pass);
      auto silu = [](float v) { return v / (1.0f + std::exp(-v)); };  // -0 past -88.7: allowed
      CHECK(verdict_of(judge(*x, map(*x, silu), settings(Fn::silu))) == Verdict::pass);
      auto silu2 = [](float v) { return v * (1.0f / (1.0f + std::exp(-v))); };
      CHECK(verdict_of(judge(*x, map(*x, silu2), settings(Fn::silu))) == Verdict::pass);
      auto sig = [](float v) { return 1.0f / (1.0f + std::exp(-v)); };
      CHECK(verdict_of(judge(*x, map(*x, sig), settings(Fn::sigmoid))) == Verdict::pass);
      CHECK(verdict_of(judge(*x, map(*x, [](float v) { return std::exp(v); }), settings(Fn::exp))) == Verdict::pass);
      CHECK(verdict_of(judge(*x, map(*x, [](float v) { return std::tanh(v); }), settings(Fn::tanh))) == Verdict::pass);
    }
  }
  SECTION("declared fast math admits __expf") {
    auto silu = [](float v) { return v / (1.0f + fast_exp(-v)); };
    CHECK(verdict_of(judge(w, map(w, silu), settings(Fn::silu, Math::fast))) == Verdict::pass);
  }
}

TEST_CASE("unary tolerance: planted errors fail", "[unary]") {
  const std::vector<float> b = band(), w = wide();
  SECTION("gelu_tanh declared as gelu fails, in f32") {
    const CompareStats s = judge(b, map(b, gelu_tanh_f), settings(Fn::gelu));
    CHECK(verdict_of(s) == Verdict::mismatch);
    // and the reverse
    CHECK(verdict_of(judge(b, map(b, gelu_erf), settings(Fn::gelu_tanh))) == Verdict::mismatch);
  }
  SECTION("gelu vs gelu_tanh in f16 and bf16 outputs: told apart at negative x only") {
    for (DType t : {DType::f16, DType::bf16}) {
      std::vector<float> neg, pos;
      for (int i = 0; i < 200; ++i) neg.push_back(-3.5f + 1.2f * float(i) / 200.0f), pos.push_back(-neg.back());
      for (int side = 0; side < 2; ++side) {
        const std::vector<float>& x = side == 0 ? neg : pos;
        const Result r = reference_of(x, settings(Fn::gelu));
        std::vector<uint16_t> y;
        for (float v : x) y.push_back(uint16_t(encode(t, round_to(t, double(gelu_tanh_f(v))))));
        const Tolerance tol = tolerance(t, Compute::f32, kDefaultScale, Subnormals::ieee);
        const TensorGeom g = TensorGeom::matrix(t, 1, int64_t(x.size()), int64_t(x.size()), 1, 0);
        const CompareStats s = compare(tol, g, reinterpret_cast<const std::byte*>(y.data()), r.ref.data(), r.bound.data());
        INFO(name(t) << (side == 0 ? " x in [-3.5, -2.3]" : " x in [2.3, 3.5]"));
        CHECK(verdict_of(s) == (side == 0 ? Verdict::mismatch : Verdict::pass));
      }
    }
  }
  SECTION("__expf under math: ieee fails") {
    auto silu = [](float v) { return v / (1.0f + fast_exp(-v)); };
    CHECK(verdict_of(judge(w, map(w, silu), settings(Fn::silu))) == Verdict::mismatch);
  }
  SECTION("fmax relu squashes NaN") {
    const std::vector<float> x{1.0f, NAN, -1.0f};
    CHECK(verdict_of(judge(x, map(x, [](float v) { return std::fmax(v, 0.0f); }), settings(Fn::relu))) ==
          Verdict::nan_mismatch);
  }
  SECTION("relu is exact: one ulp off fails") {
    std::vector<float> y = map(w, [](float v) { return v > 0 ? v : 0.0f; });
    CHECK(verdict_of(judge(w, y, settings(Fn::relu))) == Verdict::pass);
    y[3] = std::nextafter(y[3], 10.0f);
    CHECK(verdict_of(judge(w, y, settings(Fn::relu))) == Verdict::mismatch);
  }
  SECTION("tanh and sigmoid as exp ratios overflow to NaN") {
    const std::vector<float> x{50.0f, 100.0f};
    auto tanh_ratio = [](float v) {
      const float e = std::exp(2.0f * v);
      return (e - 1.0f) / (e + 1.0f);
    };
    CHECK(verdict_of(judge(x, map(x, tanh_ratio), settings(Fn::tanh))) == Verdict::nan_mismatch);
    auto sig_ratio = [](float v) {
      const float t = std::exp(v);
      return t / (1.0f + t);
    };
    CHECK(verdict_of(judge(x, map(x, sig_ratio), settings(Fn::sigmoid))) == Verdict::nan_mismatch);
  }
  SECTION("a flushed subnormal exp fails unless the spec says flush") {
    const std::vector<float> x{-95.0f};
    std::vector<float> y = map(x, [](float v) { return std::exp(v); });
    REQUIRE(y[0] > 0.0f);
    CHECK(verdict_of(judge(x, y, settings(Fn::exp))) == Verdict::pass);
    y[0] = 0.0f;
    CHECK(verdict_of(judge(x, y, settings(Fn::exp))) == Verdict::mismatch);
    CHECK(verdict_of(judge(x, y, settings(Fn::exp), Subnormals::flush)) == Verdict::pass);
  }
  SECTION("a mistyped gelu_tanh constant fails") {
    auto wrong = [](float v) { return 0.5f * v * (1.0f + std::tanh(0.7988456f * (v + 0.044715f * v * v * v))); };
    CHECK(verdict_of(judge(b, map(b, wrong), settings(Fn::gelu_tanh))) == Verdict::mismatch);
  }
  SECTION("poison left in y is unwritten output") {
    std::vector<float> y = map(w, gelu_erf);
    const uint32_t poison = uint32_t(poison_bits(DType::f32));
    std::memcpy(&y[7], &poison, 4);
    CHECK(verdict_of(judge(w, y, settings(Fn::gelu))) == Verdict::unwritten_output);
  }
}

TEST_CASE("unary spec keys", "[unary]") {
  auto text = [](const std::string& extra) {
    return "name: k\nop: unary\nbackend: host\nsource: k.cpp\ncompute: f32\ndtypes: {x: f32, y: f32}\n" + extra;
  };
  const auto dir = std::filesystem::temp_directory_path() / "assay-unary-spec";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "k.cpp") << "\n";
  CHECK_NOTHROW(parse_spec(text("fn: gelu\nmath: fast\n"), dir / "k.yaml"));
  CHECK_THROWS_WITH(parse_spec(text(""), dir / "k.yaml"), Catch::Contains("fn"));
  CHECK_THROWS_WITH(parse_spec(text("fn: gelu_erf\n"), dir / "k.yaml"), Catch::Contains("fn"));
  CHECK_THROWS_WITH(parse_spec(text("fn: relu\nmath: fastest\n"), dir / "k.yaml"), Catch::Contains("math"));
  CHECK_THROWS_WITH(parse_spec(text("fn: relu\ncompute: tf32\n"), dir / "k.yaml"), Catch::Contains("compute"));
  CHECK_THROWS_WITH(parse_spec(text("fn: relu\nalpha: 1\n"), dir / "k.yaml"), Catch::Contains("alpha"));
  CHECK_THROWS(parse_spec("name: k\nop: unary\nfn: relu\nbackend: host\nsource: k.cpp\ndtypes: {x: f32}\n", dir / "k.yaml"));
}

TEST_CASE("unary cases: bad shapes are input errors", "[unary]") {
  Spec spec;
  spec.op = "unary";
  const Op& op = op_of(spec);
  Case c = make_case(plain_parts(spec, Shape{false, 1, 3, 5}, "test"));
  CHECK_NOTHROW(op.validate(c));
  Case wrong = c;
  wrong.tensors[Y].shape = {3, 6};
  CHECK_THROWS_AS(op.validate(wrong), InputError);
  wrong = c;
  wrong.tensors.pop_back();
  CHECK_THROWS_AS(op.validate(wrong), InputError);
  wrong = c;
  wrong.tensors[X].name = "a";
  CHECK_THROWS_AS(op.validate(wrong), InputError);
  wrong = c;
  wrong.sizes[0].value = -1;
  CHECK_THROWS_AS(op.validate(wrong), InputError);
}

TEST_CASE("unary sweep: widths, misaligned offsets, grid limits, layouts, value ranges", "[unary]") {
  Spec spec;
  spec.op = "unary";
  const Op& op = op_of(spec);
  const auto cases = op.sweep(spec, 1, SweepTarget{BackendKind::host, 1e12});
  std::set<double> counts;
  bool misaligned = false, transposed = false, batched = false, past_grid = false, rows_past = false;
  std::set<Recipe> recipes;
  for (const Case& c : cases) {
    op.validate(c);
    const Shape s = rows::shape_of(c);
    counts.insert(s.elements());
    const bool compact = c.tensors[X].strides.back() == 1 && c.tensors[X].strides[0] == s.n;
    misaligned |= compact && c.tensors[X].offset % 4 != 0;
    transposed |= c.tensors[X].strides.back() > 1;
    batched |= s.batched && c.tensors[X].strides[0] > s.rows * s.n;
    past_grid |= s.elements() > 65535.0 * 256;
    rows_past |= s.total_rows() > 65535;
    recipes.insert(c.recipe);
  }
  for (double n = 1; n <= 9; ++n) CHECK(counts.count(n) == 1);
  CHECK(misaligned);
  CHECK(transposed);
  CHECK(batched);
  CHECK(past_grid);
  CHECK(rows_past);
  CHECK(recipes.size() == std::size(kRecipes));

  // The band recipe reaches gelu vs gelu_tanh's gap at negative x; mixed
  // reaches exp's f32 overflow.
  Case c = make_case(plain_parts(spec, Shape{false, 1, 16, 64}, "test"));
  c.recipe = Recipe::offset;
  int in_gap = 0;
  for (uint64_t i = 0; i < 1024; ++i) {
    const double v = recipe_value(op.recipe_params(c, X), DType::f32, 3, X, i / 64, i % 64);
    in_gap += v < -2.3 && v > -4.0;
  }
  CHECK(in_gap > 100);
  c.recipe = Recipe::mixed;
  int overflow = 0;
  for (uint64_t i = 0; i < 1024; ++i)
    overflow += recipe_value(op.recipe_params(c, X), DType::f32, 3, X, i / 64, i % 64) > 88.8;
  CHECK(overflow > 5);
}

TEST_CASE("unary fuzz codec and shrink hooks keep cases valid", "[unary]") {
  Spec spec;
  spec.op = "unary";
  const Op& op = op_of(spec);
  testing::check_codec(op, spec, 1, 300, 24, [&](const Case&, const Case& m) {
    for (const auto& s : m.sizes) CHECK(s.value < CodecLimits{}.max_dim);
    op.validate(op.with_layout(m, X, true, 2, 1));
  });
  CHECK_FALSE(op.seed_cases(spec).empty());
}

TEST_CASE("host unary zoo kernels get their expected verdicts", "[unary][samples]") {
  // Every section of the sweep is reached by then (the grid-limit case is
  // about the 8th); the planted bugs all fail within the first 20 cases (11
  // in CI's host zoo), whose 150 cases run the correct kernels longer.
  testing::check_host_zoo("unary", testing::sample_gate_options(50), 20);
}

// rows::block_elements computes the largest block without listing the
// blocks (the unary branch changed it: a case file of 2^31 x 2^31 listed
// 2^31 of them and ran out of memory); it must agree with the list.
TEST_CASE("rows::block_elements agrees with row_blocks", "[unary]") {
  uint64_t r = 7;
  for (int i = 0; i < 2000; ++i) {
    auto dim = [&](int64_t most) { return int64_t((r = mix64(r)) % uint64_t(most + 1)); };
    Shape s{(r = mix64(r)) % 2 == 0, 1, dim(3000), 0};
    s.n = (r = mix64(r)) % 4 == 0 ? dim(int64_t(1) << 23) : dim(5000);
    if (s.batched) s.b = dim(9);
    double most = 0;
    for (const rows::RowBlock& b : rows::row_blocks(s)) most = std::max(most, double(b.rows) * double(std::max<int64_t>(s.n, 1)));
    INFO(s.b << " x " << s.rows << " x " << s.n);
    CHECK(rows::block_elements(s) == most);
  }
  CHECK(rows::block_elements(Shape{false, 1, int64_t(1) << 31, int64_t(1) << 31}) == std::ldexp(1.0, 31));
}

TEST_CASE("unary: the gate runs the sweep's heavy cases last, cheapest first, the rest in order", "[unary][gate]") {
  Spec spec;
  for (auto& f : testing::sample_specs(BackendKind::cuda, "unary"))
    if (f.filename() == "exp_f32.yaml") spec = load_spec(f);
  REQUIRE(spec.op == "unary");
  const Op& op = op_of(spec);
  // A cuda target with room for the 2^31-element index case.
  std::vector<Case> sweep = op.sweep(spec, 1, SweepTarget{BackendKind::cuda, 1e12, 1e12});
  std::vector<Case> light;
  int heavy = 0;
  for (const Case& c : sweep) {
    if (op.case_bytes(c) > kHeavyCaseBytes) ++heavy;
    else light.push_back(c);
  }
  REQUIRE(heavy >= 1);
  std::vector<Case> ordered = sweep;
  heavy_cases_last(op, ordered, 0);
  REQUIRE(ordered.size() == sweep.size());
  for (size_t i = 0; i < light.size(); ++i) CHECK(ordered[i] == light[i]);
  for (size_t i = light.size(); i < ordered.size(); ++i) {
    CHECK(op.case_bytes(ordered[i]) > kHeavyCaseBytes);
    if (i > light.size()) CHECK(op.case_bytes(ordered[i - 1]) <= op.case_bytes(ordered[i]));
  }
  // Cases before `from` (the corpus) stay where they are.
  std::vector<Case> with_corpus = sweep;
  with_corpus.insert(with_corpus.begin(), ordered.back());
  heavy_cases_last(op, with_corpus, 1);
  CHECK(with_corpus.front() == ordered.back());
  CHECK(with_corpus[1] == light.front());
}
