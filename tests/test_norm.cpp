// The norm family (layernorm, rmsnorm): the FP64 reference against
// hand-computed values and the IEEE rules, the tolerance model on correct
// algorithms' results and on planted errors, spec keys and bad cases, the
// sweep and codec, and every host zoo kernel through the gate.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "case/rng.h"
#include "core/error.h"
#include "case/values.h"
#include "exec/patterns.h"
#include "ops/norm/norm_problem.h"
#include "ops/norm/norm_reference.h"
#include "ops/norm/norm_sweep.h"
#include "ops/norm/norm_tolerance.h"
#include "ops/op.h"
#include "zoo_checks.h"
#include "spec/spec.h"

using namespace assay;
using namespace assay::norm;

namespace {

// Compact f32 rows and a weight and bias, as host buffers.
struct Rows {
  int64_t rows, n;
  std::vector<float> x, w, b;
  double eps = 1e-5;
  TensorGeom gx() const { return TensorGeom::matrix(DType::f32, rows, n, n, 1, 0); }
  static TensorGeom vec(int64_t n) {
    TensorGeom g;
    g.dtype = DType::f32, g.ndim = 1, g.shape[0] = n, g.strides[0] = 1;
    return g;
  }
};
const std::byte* bytes(const std::vector<float>& v) { return reinterpret_cast<const std::byte*>(v.data()); }

Rows make_rows(int64_t rows, int64_t n, auto value) {
  Rows r{rows, n, {}, {}, {}};
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) r.x.push_back(float(value(i, j)));
  for (int64_t j = 0; j < n; ++j) r.w.push_back(float(0.5 + 0.25 * std::sin(double(j))));
  for (int64_t j = 0; j < n; ++j) r.b.push_back(float(0.1 * std::cos(double(j))));
  return r;
}

Case case_of(const Rows& r, bool rms) {
  Parts p;
  p.rms = rms, p.shape = rows::Shape{false, 1, r.rows, r.n}, p.eps = r.eps;
  return make_case(p);
}

struct Result {
  std::vector<double> y_ref, y_bound, stat[4];
};
Result reference_of(const Rows& r, bool rms, Settings s = {}, double T = kDefaultScale) {
  s.rms = rms;
  Result out;
  out.y_ref.resize(size_t(r.rows * r.n)), out.y_bound.resize(size_t(r.rows * r.n));
  for (auto& v : out.stat) v.resize(size_t(r.rows));
  Inputs in;
  in.x = bytes(r.x), in.gx = r.gx(), in.w = bytes(r.w), in.gw = Rows::vec(r.n);
  if (!rms) in.b = bytes(r.b), in.gb = Rows::vec(r.n);
  BlockOut o{out.y_ref.data(), out.y_bound.data(), {out.stat[0].data(), out.stat[1].data(), out.stat[2].data(), out.stat[3].data()}};
  reference_host(in, error_model(s, Compute::f32, case_of(r, rms), T), 0, r.rows, o);
  return out;
}

// A kernel's f32 outputs.
struct Out {
  std::vector<float> y, mean, rstd;
};
enum class Algo { twopass, welford, naive, unbiased, eps_outside, rstd_as_std, lanes };

Out layernorm_f32(const Rows& r, Algo a) {
  Out o;
  o.y.resize(r.x.size()), o.mean.resize(size_t(r.rows)), o.rstd.resize(size_t(r.rows));
  const float eps = float(r.eps);
  for (int64_t i = 0; i < r.rows; ++i) {
    const float* x = r.x.data() + i * r.n;
    float mean = 0, var = 0;
    if (a == Algo::welford) {
      float m2 = 0;
      for (int64_t j = 0; j < r.n; ++j) {
        const float d = x[j] - mean;
        mean += d / float(j + 1);
        m2 += d * (x[j] - mean);
      }
      var = m2 / float(r.n);
    } else if (a == Algo::naive) {
      float s = 0, sq = 0;
      for (int64_t j = 0; j < r.n; ++j) s += x[j], sq += x[j] * x[j];
      mean = s / float(r.n);
      var = sq / float(r.n) - mean * mean;
    } else {
      float part[32] = {};
      for (int64_t j = 0; j < r.n; ++j) part[a == Algo::lanes ? j % 32 : 0] += x[j];
      float s = 0;
      for (float p : part) s += p;
      mean = s / float(r.n);
      float q = 0;
      for (int64_t j = 0; j < r.n; ++j) q += (x[j] - mean) * (x[j] - mean);
      var = q / float(a == Algo::unbiased ? r.n - 1 : r.n);
    }
    float rstd = a == Algo::eps_outside ? 1.0f / (std::sqrt(var) + eps) : 1.0f / std::sqrt(var + eps);
    for (int64_t j = 0; j < r.n; ++j) o.y[size_t(i * r.n + j)] = (x[j] - mean) * rstd * r.w[size_t(j)] + r.b[size_t(j)];
    o.mean[size_t(i)] = mean;
    o.rstd[size_t(i)] = a == Algo::rstd_as_std ? std::sqrt(var + eps) : rstd;
  }
  return o;
}
Out rmsnorm_f32(const Rows& r, bool n_minus_1 = false) {
  Out o;
  o.y.resize(r.x.size());
  for (int64_t i = 0; i < r.rows; ++i) {
    const float* x = r.x.data() + i * r.n;
    float q = 0;
    for (int64_t j = 0; j < r.n; ++j) q += x[j] * x[j];
    const float rstd = 1.0f / std::sqrt(q / float(n_minus_1 ? r.n - 1 : r.n) + float(r.eps));
    for (int64_t j = 0; j < r.n; ++j) o.y[size_t(i * r.n + j)] = x[j] * rstd * r.w[size_t(j)];
  }
  return o;
}

struct Verdicts {
  Verdict y, mean, rstd;
  double y_ratio;
};
Verdicts judge(const Rows& r, const Out& o, bool rms, Settings s = {}) {
  const Result ref = reference_of(r, rms, s);
  Verdicts v{};
  const Tolerance ty = tolerance(DType::f32, Compute::f32, Subnormals::ieee, false);
  const CompareStats sy = compare(ty, r.gx(), bytes(o.y), ref.y_ref.data(), ref.y_bound.data());
  v.y = verdict_of(sy), v.y_ratio = sy.max_ratio;
  v.mean = v.rstd = Verdict::pass;
  if (!rms) {
    const TensorGeom g = Rows::vec(r.rows);
    v.mean = verdict_of(compare(tolerance(DType::f32, Compute::f32, Subnormals::ieee, true), g, bytes(o.mean),
                                ref.stat[MeanRef].data(), ref.stat[MeanBound].data()));
    v.rstd = verdict_of(compare(ty, g, bytes(o.rstd), ref.stat[RstdRef].data(), ref.stat[RstdBound].data()));
  }
  return v;
}
bool passes(const Verdicts& v) { return v.y == Verdict::pass && v.mean == Verdict::pass && v.rstd == Verdict::pass; }

double uniform(int64_t i, int64_t j) { return 2.0 * unit_double(hash3(7, uint64_t(i), uint64_t(j))) - 1.0; }
double offset(int64_t i, int64_t j) { return 1e4 + 0.017320508075688773 * uniform(i, j); }

}  // namespace

TEST_CASE("layernorm and rmsnorm references match hand-computed values", "[norm]") {
  Rows r{1, 4, {1, 2, 3, 4}, {2, 2, 2, 2}, {1, 1, 1, 1}};
  r.eps = 0;
  const Result ln = reference_of(r, false);
  const double rstd = 1.0 / std::sqrt(1.25);  // mean 2.5, biased variance 1.25
  CHECK(ln.stat[MeanRef][0] == 2.5);
  CHECK(ln.stat[RstdRef][0] == Approx(rstd).epsilon(1e-15));
  for (int j = 0; j < 4; ++j) CHECK(ln.y_ref[size_t(j)] == Approx((j + 1 - 2.5) * rstd * 2 + 1).epsilon(1e-15));
  for (double b : ln.y_bound) CHECK(b > 0);
  CHECK(ln.stat[RstdBound][0] > 0);
  Rows q{1, 2, {3, 4}, {1, 0.5f}, {}};
  q.eps = 0.5;
  const Result rms = reference_of(q, true);
  const double rs = 1.0 / std::sqrt(12.5 + 0.5);
  CHECK(rms.y_ref[0] == Approx(3 * rs).epsilon(1e-15));
  CHECK(rms.y_ref[1] == Approx(4 * rs * 0.5).epsilon(1e-15));
  // A constant row: var 0, rstd 1/sqrt(eps), y = bias.
  Rows c{1, 3, {5, 5, 5}, {1, 1, 1}, {0.25f, 0.5f, 0.75f}};
  c.eps = 1e-4;
  const Result cr = reference_of(c, false);
  CHECK(cr.stat[RstdRef][0] == Approx(100.0).epsilon(1e-12));
  CHECK(cr.y_ref[1] == 0.5);
}

TEST_CASE("norm references: NaN, Inf and empty rows", "[norm]") {
  const float nan = NAN, inf = INFINITY;
  Rows r{3, 3, {1, nan, 2, 1, inf, 2, inf, -inf, 0}, {1, 1, 1}, {0, 0, 0}};
  const Result ln = reference_of(r, false);
  CHECK(std::isnan(ln.stat[MeanRef][0]));
  CHECK(ln.stat[MeanRef][1] == INFINITY);  // the mean of a row with one +Inf
  CHECK(std::isnan(ln.stat[RstdRef][1]));
  CHECK(std::isnan(ln.stat[MeanRef][2]));
  for (double y : ln.y_ref) CHECK(std::isnan(y));
  const Result rms = reference_of(r, true);
  CHECK(std::isnan(rms.y_ref[0]));
  CHECK(rms.y_ref[3] == 0.0);  // 1 / sqrt(Inf) = 0: finite x give 0
  CHECK(std::isnan(rms.y_ref[4]));  // Inf * 0
  Rows empty{2, 0, {}, {}, {}};
  const Result e = reference_of(empty, false);
  CHECK(std::isnan(e.stat[MeanRef][0]));  // 0/0, as a kernel's sum / n
  CHECK(std::isnan(e.stat[RstdRef][1]));
}

TEST_CASE("norm tolerance: correct f32 algorithms pass", "[norm]") {
  SECTION("uniform rows, sequential, lane-tree and Welford") {
    for (int64_t n : {1, 3, 33, 1025, 4097}) {
      const Rows r = make_rows(8, n, uniform);
      for (Algo a : {Algo::twopass, Algo::lanes, Algo::welford}) {
        INFO("n = " << n << " algo " << int(a));
        CHECK(passes(judge(r, layernorm_f32(r, a), false)));
      }
      CHECK(passes(judge(r, rmsnorm_f32(r), true)));
    }
  }
  SECTION("a long row: a sequential f32 sum's drift") {
    const Rows r = make_rows(2, 70001, [](int64_t i, int64_t j) { return 0.75 + 0.25 * uniform(i, j); });
    CHECK(passes(judge(r, layernorm_f32(r, Algo::twopass), false)));
    CHECK(passes(judge(r, layernorm_f32(r, Algo::welford), false)));
    CHECK(passes(judge(r, rmsnorm_f32(r), true)));
  }
  SECTION("mean 1e4, sigma 1e-2: two-pass and Welford err by about 0.1 and pass") {
    for (int64_t n : {2, 3, 8, 33, 1024, 4097}) {
      const Rows r = make_rows(64, n, offset);
      INFO("n = " << n);
      const Verdicts two = judge(r, layernorm_f32(r, Algo::twopass), false);
      CHECK(passes(two));
      CHECK(passes(judge(r, layernorm_f32(r, Algo::welford), false)));
      CHECK(passes(judge(r, rmsnorm_f32(r), true)));
    }
  }
  SECTION("the correctly rounded reference itself passes with ratio 0.5 or less") {
    const Rows r = make_rows(4, 129, uniform);
    const Result ref = reference_of(r, false);
    Out o;
    for (double v : ref.y_ref) o.y.push_back(float(v));
    for (double v : ref.stat[MeanRef]) o.mean.push_back(float(v));
    for (double v : ref.stat[RstdRef]) o.rstd.push_back(float(v));
    const Verdicts v = judge(r, o, false);
    CHECK(passes(v));
    CHECK(v.y_ratio <= 0.5);
  }
}

TEST_CASE("norm tolerance: planted errors fail", "[norm]") {
  SECTION("E[x^2] - E[x]^2 on mean 1e4, sigma 1e-2 rows") {
    for (int64_t n : {2, 3}) {
      const Rows r = make_rows(64, n, offset);
      const Verdicts v = judge(r, layernorm_f32(r, Algo::naive), false);
      INFO("n = " << n);
      CHECK(v.rstd != Verdict::pass);
      CHECK(v.y != Verdict::pass);
    }
    // Where it happens to stay non-negative, the value is still caught
    // (a kernel that clamps var at 0: rstd 1/sqrt(eps) or far too small).
    const Rows r = make_rows(64, 3, offset);
    Out o = layernorm_f32(r, Algo::naive);
    int clamped = 0;
    for (int64_t i = 0; i < r.rows; ++i)
      if (std::isnan(o.rstd[size_t(i)])) {
        o.rstd[size_t(i)] = 1.0f / std::sqrt(float(r.eps));
        for (int64_t j = 0; j < r.n; ++j)
          o.y[size_t(i * r.n + j)] = (r.x[size_t(i * r.n + j)] - o.mean[size_t(i)]) * o.rstd[size_t(i)] * r.w[size_t(j)] +
                                     r.b[size_t(j)];
        ++clamped;
      }
    REQUIRE(clamped > 0);
    const Verdicts v = judge(r, o, false);
    CHECK(v.rstd == Verdict::mismatch);
    CHECK(v.y == Verdict::mismatch);
  }
  SECTION("unbiased variance, eps outside the root, rstd stored as std") {
    const Rows u = make_rows(16, 33, uniform);
    CHECK(judge(u, layernorm_f32(u, Algo::unbiased), false).rstd == Verdict::mismatch);
    CHECK(judge(u, layernorm_f32(u, Algo::rstd_as_std), false).rstd == Verdict::mismatch);
    Rows c = make_rows(16, 33, [](int64_t i, int64_t) { return 3.0 + double(i); });  // constant rows
    const Verdicts v = judge(c, layernorm_f32(c, Algo::eps_outside), false);
    CHECK(v.rstd == Verdict::mismatch);
    CHECK(judge(u, rmsnorm_f32(u, true), true).y == Verdict::mismatch);
  }
  SECTION("1 % in one element, a missing bias, poison") {
    const Rows r = make_rows(4, 64, uniform);
    Out o = layernorm_f32(r, Algo::twopass);
    o.y[5] *= 1.01f;
    CHECK(judge(r, o, false).y == Verdict::mismatch);
    o = layernorm_f32(r, Algo::twopass);
    o.y[63] -= r.b[63];
    CHECK(judge(r, o, false).y == Verdict::mismatch);
    o = layernorm_f32(r, Algo::twopass);
    const uint32_t poison = uint32_t(poison_bits(DType::f32));
    std::memcpy(&o.rstd[2], &poison, 4);
    CHECK(judge(r, o, false).rstd == Verdict::unwritten_output);
  }
  SECTION("f16 accumulation of a long row") {
    const Rows r = make_rows(2, 4097, uniform);
    Out o = rmsnorm_f32(r);
    // The squares summed in binary16 (each partial rounded to 11 bits).
    for (int64_t i = 0; i < r.rows; ++i) {
      float q = 0;
      for (int64_t j = 0; j < r.n; ++j) {
        q += r.x[size_t(i * r.n + j)] * r.x[size_t(i * r.n + j)];
        int e;
        std::frexp(q, &e);
        q = std::ldexp(std::nearbyint(std::ldexp(q, 11 - e)), e - 11);
      }
      const float rstd = 1.0f / std::sqrt(q / float(r.n) + float(r.eps));
      for (int64_t j = 0; j < r.n; ++j) o.y[size_t(i * r.n + j)] = r.x[size_t(i * r.n + j)] * rstd * r.w[size_t(j)];
    }
    CHECK(judge(r, o, true).y == Verdict::mismatch);
  }
}

TEST_CASE("norm spec keys, dtypes and compute", "[norm]") {
  const auto dir = std::filesystem::temp_directory_path() / "assay-norm-spec";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "k.cpp") << "\n";
  auto ln = [](const std::string& extra, const std::string& dtypes = "{x: f32, weight: f32, bias: f32, y: f32}") {
    const std::string compute = extra.find("compute:") == std::string::npos ? "compute: f32\n" : "";
    return "name: k\nop: layernorm\nbackend: host\nsource: k.cpp\ndtypes: " + dtypes + "\n" + compute + extra;
  };
  const auto file = dir / "k.yaml";
  CHECK_NOTHROW(parse_spec(ln("math: cuda\nwrites: [y]\n"), file));
  CHECK_NOTHROW(parse_spec(ln("writes: [y, mean, rstd]\n", "{x: f16, weight: f16, bias: f16, y: f16, mean: f32, rstd: f32}"), file));
  CHECK_THROWS_WITH(parse_spec(ln("writes: [y, mean]\n"), file), Catch::Contains("writes"));
  CHECK_THROWS_WITH(parse_spec(ln("writes: [z]\n"), file), Catch::Contains("writes"));
  CHECK_THROWS_WITH(parse_spec(ln("math: fastest\n"), file), Catch::Contains("math"));
  CHECK_THROWS_WITH(parse_spec(ln("compute: f16\n"), file), Catch::Contains("f16 or bf16 overflows"));
  CHECK_THROWS_WITH(parse_spec(ln("compute: tf32\n"), file), Catch::Contains("compute"));
  CHECK_THROWS_WITH(parse_spec(ln("alpha: 1\n"), file), Catch::Contains("alpha"));
  CHECK_THROWS_WITH(parse_spec(ln("", "{x: f32, weight: f32, y: f32}"), file), Catch::Contains("bias"));
  CHECK_THROWS_WITH(parse_spec(ln("", "{x: f32, weight: f32, bias: f32, y: f32, gamma: f32}"), file),
                    Catch::Contains("gamma"));
  const std::string rms = "name: k\nop: rmsnorm\nbackend: host\nsource: k.cpp\ncompute: f32\ndtypes: {x: f32, weight: f32, y: f32}\n";
  CHECK_NOTHROW(parse_spec(rms + "math: fast\n", file));
  CHECK_THROWS_WITH(parse_spec(rms + "writes: [y]\n", file), Catch::Contains("writes"));
  CHECK_THROWS_WITH(parse_spec("name: k\nop: rmsnorm\nbackend: host\nsource: k.cpp\ncompute: f32\ndtypes: {x: f32, weight: f32, bias: f32, y: f32}\n", file),
                    Catch::Contains("bias"));
}

TEST_CASE("norm cases: wrong shapes, names and eps are input errors", "[norm]") {
  Spec spec;
  spec.op = "layernorm";
  const Op& op = op_of(spec);
  Parts p;
  p.shape = rows::Shape{false, 1, 4, 8};
  const Case good = make_case(p);
  CHECK_NOTHROW(op.validate(good));
  Case c = good;
  c.tensors[W].shape = {4};
  CHECK_THROWS_AS(op.validate(c), InputError);
  c = good;
  c.tensors[MEAN].shape = {4, 8};
  c.tensors[MEAN].strides = {8, 1};
  CHECK_THROWS_AS(op.validate(c), InputError);
  c = good;
  c.scalars[0].value = -1;
  CHECK_THROWS_WITH(op.validate(c), Catch::Contains("eps"));
  c = good;
  c.scalars.clear();
  CHECK_THROWS_AS(op.validate(c), InputError);
  c = good;
  std::swap(c.tensors[W], c.tensors[B]);
  CHECK_THROWS_AS(op.validate(c), InputError);
  // A case file with a bad tensor reads back as an InputError, not a crash.
  std::string text = to_yaml(good);
  const auto at = text.find("[8]");
  REQUIRE(at != std::string::npos);
  text.replace(at, 3, "[9]");
  CHECK_THROWS_AS(op.validate(parse_case_yaml(text, "case.yaml").c), InputError);
}

TEST_CASE("norm sweep: row lengths, grid limits, cancellation, eps, layouts", "[norm]") {
  for (const char* name : {"layernorm", "rmsnorm"}) {
    Spec spec;
    spec.op = name;
    const Op& op = op_of(spec);
    const bool rms = std::string(name) == "rmsnorm";
    const auto cases = op.sweep(spec, 1, SweepTarget{BackendKind::host, 1e12});
    std::set<int64_t> ns;
    bool past_grid = false, transposed = false, broadcast = false, strided_w = false, gaps = false, offset_recipe = false,
         eps0 = false, constant = false;
    for (const Case& c : cases) {
      op.validate(c);
      const rows::Shape s = rows::shape_of(c);
      ns.insert(s.n);
      past_grid |= s.total_rows() > 65535;
      transposed |= c.tensors[0].strides.back() > 1;
      broadcast |= c.tensors[1].strides[0] == 0;
      strided_w |= c.tensors[1].strides[0] > 1;
      gaps |= s.batched && c.tensors[0].strides[0] > s.rows * s.n;
      offset_recipe |= c.recipe == Recipe::offset && s.n <= 3;
      constant |= c.recipe == Recipe::ints;
      if (c.scalars[0].value == 0.0) {
        eps0 = true;
        CHECK((c.recipe == Recipe::uniform || c.recipe == Recipe::offset));  // never a zero variance
      }
    }
    for (int64_t n : rows::kRowLengths) CHECK(ns.count(n) == 1);
    CHECK(ns.count(rows::kPastWord) == 1);
    CHECK(past_grid);
    CHECK(transposed);
    CHECK(broadcast);
    CHECK(strided_w);
    CHECK(gaps);
    CHECK(offset_recipe);
    CHECK(eps0);
    CHECK(constant);
    (void)rms;
  }
  // ints plants constant rows (var = 0).
  Parts p;
  p.shape = rows::Shape{false, 1, 256, 33}, p.recipe = Recipe::ints;
  const Case c = make_case(p);
  const RecipeParams rp = norm::recipe_params(c, 0);
  int constant = 0;
  for (uint64_t r = 0; r < 256; ++r) {
    std::set<double> v;
    for (uint64_t col = 0; col < 33; ++col) v.insert(recipe_value(rp, DType::f32, 7, 0, r, col));
    constant += v.size() == 1;
  }
  CHECK(constant > 10);
}

TEST_CASE("norm fuzz codec and shrink hooks keep cases valid", "[norm]") {
  for (const char* name : {"layernorm", "rmsnorm"}) {
    Spec spec;
    spec.op = name;
    const Op& op = op_of(spec);
    bool broadcast = false;
    testing::check_codec(op, spec, 3, 400, 24, [&](const Case&, const Case& m) {
      broadcast |= m.tensors[1].strides[0] == 0;
      for (const auto& s : m.sizes) CHECK(s.value < CodecLimits{}.max_dim);
      std::vector<int64_t> sizes;
      for (const auto& s : m.sizes) sizes.push_back(s.value / 2);
      op.validate(op.resize(m, sizes, false));
      op.validate(op.with_layout(m, 0, true, 2, 1));
    });
    CHECK(broadcast);
  }
}

TEST_CASE("host norm zoo kernels get their expected verdicts", "[norm][samples]") {
  // Planted host bugs first fail by case 47; the zoo runs the correct ones longer.
  for (const char* family : {"layernorm", "rmsnorm"}) testing::check_host_zoo(family, testing::sample_gate_options(100), 10);
}
