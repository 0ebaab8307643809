// The softmax family: the FP64 reference against hand-computed values and
// the IEEE rules for NaN and -Inf, the tolerance model on good and bad
// results, the sweep and codec, and every host zoo kernel through the gate.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "case/rng.h"
#include "case/values.h"
#include "exec/patterns.h"
#include "ops/op.h"
#include "ops/softmax/softmax_fuzz.h"
#include "ops/softmax/softmax_reference_host.h"
#include "ops/softmax/softmax_sweep.h"
#include "ops/softmax/softmax_tolerance.h"
#include "zoo_checks.h"
#include "spec/spec.h"

using namespace assay;
using namespace assay::softmax;

namespace {

const double kInf = INFINITY;

// One f32 row (or several of equal length) as a compact buffer.
struct Rows {
  int64_t rows, n;
  std::vector<float> data;
  TensorGeom geom() const { return TensorGeom::matrix(DType::f32, rows, n, n, 1, 0); }
  const std::byte* bytes() const { return reinterpret_cast<const std::byte*>(data.data()); }
};

struct Result {
  std::vector<double> ref, bound;
};

Result reference_of(const Rows& x, Settings s = {}, Compute compute = Compute::f32) {
  Result r;
  r.ref.resize(size_t(x.rows * x.n)), r.bound.resize(size_t(x.rows * x.n));
  reference_host(x.bytes(), x.geom(), error_model(s, compute, DType::f32), 0, x.rows, r.ref.data(), r.bound.data());
  return r;
}

// A candidate's f32 output judged against the reference.
CompareStats judge(const Rows& x, const std::vector<float>& y, Settings s = {}, Subnormals sub = Subnormals::ieee) {
  const Result r = reference_of(x, s);
  const Tolerance tol = tolerance(DType::f32, Compute::f32, kDefaultScale, sub);
  return compare(tol, x.geom(), reinterpret_cast<const std::byte*>(y.data()), r.ref.data(), r.bound.data());
}

// softmax of a row in f32, as a kernel computes it (with or without the max).
std::vector<float> softmax_f32(const Rows& x, bool subtract_max = true) {
  std::vector<float> y(x.data.size());
  for (int64_t r = 0; r < x.rows; ++r) {
    const float* in = x.data.data() + r * x.n;
    float m = -INFINITY;
    for (int64_t c = 0; c < x.n; ++c) m = std::max(m, in[c]);
    if (!subtract_max) m = 0;
    float s = 0;
    for (int64_t c = 0; c < x.n; ++c) s += std::exp(in[c] - m);
    for (int64_t c = 0; c < x.n; ++c) y[size_t(r * x.n + c)] = std::exp(in[c] - m) / s;
  }
  return y;
}

}  // namespace

TEST_CASE("softmax reference matches hand-computed values", "[softmax]") {
  Rows x{1, 3, {1.0f, 2.0f, 3.0f}};
  const double s = std::exp(-2.0) + std::exp(-1.0) + 1.0;
  Result r = reference_of(x);
  CHECK(r.ref[0] == Approx(std::exp(-2.0) / s).epsilon(1e-15));
  CHECK(r.ref[1] == Approx(std::exp(-1.0) / s).epsilon(1e-15));
  CHECK(r.ref[2] == Approx(1.0 / s).epsilon(1e-15));
  for (double b : r.bound) CHECK(b > 0);
  Settings log;
  log.log = true;
  Result l = reference_of(x, log);
  CHECK(l.ref[0] == Approx(-2.0 - std::log(s)).epsilon(1e-15));
  CHECK(l.ref[2] == Approx(-std::log(s)).epsilon(1e-15));
  // Ties: equal logits share the mass equally.
  Result t = reference_of(Rows{1, 4, {3, 3, 3, 3}});
  for (double v : t.ref) CHECK(v == 0.25);
}

TEST_CASE("softmax reference: NaN, +Inf and -Inf rows", "[softmax]") {
  const float nan = NAN, inf = INFINITY;
  Rows x{5, 3, {1, nan, 2,  // a NaN: the row is NaN
                1, inf, 2,  // +Inf: NaN (inf - inf)
                1, -inf, 2,  // -Inf: 0 there, the rest as softmax of {1, 2}
                -inf, -inf, -inf,  // fully masked
                0, 0, 0}};
  Result r = reference_of(x);
  for (int c = 0; c < 6; ++c) CHECK(std::isnan(r.ref[size_t(c)]));
  CHECK(r.ref[7] == 0.0);
  CHECK(r.bound[7] == 0.0);
  CHECK(r.ref[6] == Approx(1.0 / (1.0 + std::exp(1.0))).epsilon(1e-15));
  for (int c = 9; c < 12; ++c) CHECK(std::isnan(r.ref[size_t(c)]));
  CHECK(r.ref[12] == Approx(1.0 / 3.0).epsilon(1e-15));

  Settings zero;
  zero.empty_zero = true;
  Result z = reference_of(x, zero);
  for (int c = 9; c < 12; ++c) CHECK(z.ref[size_t(c)] == 0.0);
  CHECK(std::isnan(z.ref[1]));  // NaN still propagates

  Settings log = zero;
  log.log = true;
  Result l = reference_of(x, log);
  CHECK(l.ref[7] == -kInf);
  for (int c = 9; c < 12; ++c) CHECK(l.ref[size_t(c)] == -kInf);
  log.empty_zero = false;
  CHECK(std::isnan(reference_of(x, log).ref[9]));
}

TEST_CASE("softmax tolerance: right results pass, planted errors fail", "[softmax]") {
  Rows x{4, 64, {}};
  for (int i = 0; i < 4 * 64; ++i) x.data.push_back(float(std::sin(i * 0.37) * 3.0));
  SECTION("a correctly rounded f32 result passes") {
    const Result r = reference_of(x);
    std::vector<float> y(r.ref.begin(), r.ref.end());
    CHECK(verdict_of(judge(x, y)) == Verdict::pass);
  }
  SECTION("an f32 kernel's result and a few ulps more pass") {
    std::vector<float> y = softmax_f32(x);
    CHECK(verdict_of(judge(x, y)) == Verdict::pass);
    for (float& v : y) v = std::nextafter(std::nextafter(v, 2.0f), 2.0f);
    CHECK(verdict_of(judge(x, y)) == Verdict::pass);
  }
  SECTION("an error of a few percent fails") {
    std::vector<float> y = softmax_f32(x);
    y[5] *= 1.03f;
    const CompareStats s = judge(x, y);
    CHECK(verdict_of(s) == Verdict::mismatch);
    REQUIRE_FALSE(s.first_bad.empty());
    CHECK(s.first_bad[0].col == 5);
  }
  SECTION("without the max subtraction, large logits overflow: NaN where the reference is finite") {
    Rows big = x;
    for (float& v : big.data) v *= 40.0f;  // up to 120: exp overflows f32
    CHECK(verdict_of(judge(big, softmax_f32(big, false))) == Verdict::nan_mismatch);
  }
  SECTION("a flushed subnormal output fails unless the spec says flush") {
    Rows sub{1, 2, {0.0f, -95.0f}};  // exp(-95) ~ 5.5e-42: subnormal in f32
    std::vector<float> y = softmax_f32(sub);
    REQUIRE(y[1] > 0.0f);
    REQUIRE(y[1] < 1.17549435e-38f);
    CHECK(verdict_of(judge(sub, y)) == Verdict::pass);
    y[1] = 0.0f;
    CHECK(verdict_of(judge(sub, y)) == Verdict::mismatch);
    CHECK(verdict_of(judge(sub, y, {}, Subnormals::flush)) == Verdict::pass);
  }
  SECTION("poison left in y is unwritten output, y's bad elements name tensor 1 in the op's judge") {
    std::vector<float> y = softmax_f32(x);
    const uint32_t poison = uint32_t(poison_bits(DType::f32));
    std::memcpy(&y[7], &poison, 4);
    CHECK(verdict_of(judge(x, y)) == Verdict::unwritten_output);
  }
}

TEST_CASE("log_softmax tolerance: log of the softmax fails where probabilities underflow", "[softmax]") {
  Rows x{1, 3, {0.0f, -50.0f, -120.0f}};
  Settings log;
  log.log = true;
  std::vector<float> good(3), bad(3);
  const float m = 0.0f, s = 1.0f + std::exp(-50.0f) + std::exp(-120.0f);
  for (int i = 0; i < 3; ++i) {
    good[size_t(i)] = (x.data[size_t(i)] - m) - std::log(s);
    bad[size_t(i)] = std::log(std::exp(x.data[size_t(i)] - m) / s);
  }
  CHECK(verdict_of(judge(x, good, log)) == Verdict::pass);
  CHECK(verdict_of(judge(x, bad, log)) == Verdict::nan_mismatch);  // log(0) = -inf at -120
}

TEST_CASE("softmax spec keys and compute", "[softmax]") {
  auto spec_text = [](const std::string& extra) {
    return "name: k\nop: softmax\nbackend: host\nsource: k.cpp\ncompute: f32\ndtypes: {x: f32, y: f32}\n" + extra;
  };
  const auto dir = std::filesystem::temp_directory_path() / "assay-softmax-spec";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "k.cpp") << "\n";
  CHECK_NOTHROW(parse_spec(spec_text("math: fast\nempty_rows: zero\n"), dir / "k.yaml"));
  CHECK_THROWS_WITH(parse_spec(spec_text("compute: tf32\n"), dir / "k.yaml"), Catch::Contains("compute"));
  CHECK_THROWS_WITH(parse_spec(spec_text("math: fastest\n"), dir / "k.yaml"), Catch::Contains("math"));
  CHECK_THROWS_WITH(parse_spec(spec_text("alpha: 1\n"), dir / "k.yaml"), Catch::Contains("alpha"));
  CHECK_THROWS(parse_spec("name: k\nop: softmax\nbackend: host\nsource: k.cpp\ncompute: f32\ndtypes: {x: f32}\n", dir / "k.yaml"));
}

TEST_CASE("softmax sweep: row lengths, grid limits, layouts, masked rows", "[softmax]") {
  Spec spec;
  spec.op = "softmax";
  const Op& op = op_of(spec);
  const auto cases = op.sweep(spec, 1, SweepTarget{BackendKind::host, 1e12});
  std::set<int64_t> ns;
  bool past_grid = false, transposed = false, batched = false, offset = false;
  for (const Case& c : cases) {
    op.validate(c);
    const Shape s = shape_of(c);
    ns.insert(s.n);
    past_grid |= s.total_rows() > 65535;
    transposed |= c.tensors[X].strides.back() > 1;
    batched |= s.batched && c.tensors[X].strides[0] > s.rows * s.n;
    offset |= c.tensors[X].offset > 0 || c.tensors[Y].offset > 0;
  }
  for (int64_t n : {1, 2, 3, 31, 32, 33, 1023, 1024, 1025, 70001}) CHECK(ns.count(n) == 1);
  CHECK(past_grid);
  CHECK(transposed);
  CHECK(batched);
  CHECK(offset);

  // The specials recipe plants fully masked rows and rows with one special value.
  Parts p = plain_parts(spec, false, Shape{false, 1, 256, 33}, "test");
  p.recipe = Recipe::specials;
  const Case c = make_case(p);
  const RecipeParams rp = op.recipe_params(c, X);
  int masked = 0, one_neg_inf = 0, one_pos_inf = 0, one_nan = 0;
  for (uint64_t r = 0; r < 256; ++r) {
    int neg = 0, pos = 0, nan = 0;
    for (uint64_t col = 0; col < 33; ++col) {
      const double v = recipe_value(rp, DType::f32, 7, X, r, col);
      neg += v == -kInf, pos += v == kInf, nan += std::isnan(v);
    }
    masked += neg == 33, one_neg_inf += neg == 1 && pos == 0 && nan == 0;
    one_pos_inf += pos == 1 && nan == 0, one_nan += nan == 1 && pos == 0;
  }
  CHECK(masked > 10);
  CHECK(one_neg_inf > 3);
  CHECK(one_pos_inf > 3);
  CHECK(one_nan > 3);
}

TEST_CASE("softmax fuzz codec and shrink hooks keep cases valid", "[softmax]") {
  Spec spec;
  spec.op = "log_softmax";
  const Op& op = op_of(spec);
  testing::check_codec(op, spec, 1, 500, 20, [&](const Case&, const Case& m) {
    for (const auto& s : m.sizes) CHECK(s.value < CodecLimits{}.max_dim);
    std::vector<int64_t> sizes;
    for (const auto& s : m.sizes) sizes.push_back(s.value / 2);
    const Case small = op.resize(m, sizes, true);
    if (shape_of(small).rows > 1 && shape_of(small).n > 1)  // (one row or column: either orientation)
      CHECK(layout_of(small, X).col_major == layout_of(m, X).col_major);
  });
}

TEST_CASE("host softmax zoo kernels get their expected verdicts", "[softmax][samples]") {
  // The planted softmax bugs first fail by case 6 (CI's host zoo, whose 150
  // cases run the correct kernels longer); each sweep section is reached by 50.
  testing::check_host_zoo("softmax", testing::sample_gate_options(50), 10);
}
