// The attention family: the FP64 reference against hand-computed rows
// (softmax weights, bottom-right causal rows, grouped heads, masked NaN
// keys, rows without a finite answer), the bound against f32 and f16-P
// arithmetic and planted errors, spec keys, the sweep and codec, and every
// host zoo kernel through the gate.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "ops/attention/attention_reference.h"
#include "ops/attention/attention_tolerance.h"
#include "ops/op.h"
#include "spec/spec.h"
#include "zoo_checks.h"

using namespace assay;
using namespace assay::attention;

namespace {

std::filesystem::path spec_dir() {
  const auto dir = std::filesystem::temp_directory_path() / "assay-attention-spec";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "k.cpp") << "\n";
  return dir;
}
Spec spec_of(const std::string& body, const char* compute = "f32") {
  return parse_spec("name: k\nop: attention\nbackend: host\nsource: k.cpp\ncompute: " + std::string(compute) + "\n" +
                        body,
                    spec_dir() / "k.yaml");
}
const char* kF32 = "dtypes: {q: f32, k: f32, v: f32, o: f32, lse: f32}\n";

// Compact f64 tensors [b, h, s, e] holding given values, and the reference's answer.
struct Rows {
  Sizes z;
  bool causal = false;
  double scale = 1;
  std::vector<double> q, k, v;
  Model m;
  BlockAnswer a;

  void run() {
    Problem p;
    auto geom = [](int64_t b, int64_t h, int64_t s, int64_t e) {
      TensorGeom g;
      g.dtype = DType::f64, g.ndim = 4;
      const int64_t shape[] = {b, h, s, e}, strides[] = {h * s * e, s * e, e, 1};
      for (int i = 0; i < 4; ++i) g.shape[i] = shape[i], g.strides[i] = strides[i];
      return g;
    };
    p.q = geom(z.b, z.hq, z.sq, z.d), p.k = geom(z.b, z.hk, z.sk, z.d), p.v = geom(z.b, z.hk, z.sk, z.dv);
    p.b = z.b, p.hq = z.hq, p.hk = z.hk, p.sq = z.sq, p.sk = z.sk, p.d = z.d, p.dv = z.dv;
    p.scale = scale, p.causal = causal;
    HeadBlock blk{0, z.b, 0, z.hq};
    const size_t rows = size_t(blk.rows(z.sq));
    for (auto* x : {&a.o, &a.o_bound, &a.o_alt}) x->assign(rows * size_t(z.dv), 0.0);
    for (auto* x : {&a.lse, &a.lse_bound, &a.lse_alt}) x->assign(rows, 0.0);
    reference_host(p, reinterpret_cast<const std::byte*>(q.data()), reinterpret_cast<const std::byte*>(k.data()),
                   reinterpret_cast<const std::byte*>(v.data()), m, blk, a);
  }
};

Settings plain_settings() { return Settings{}; }

}  // namespace

TEST_CASE("attention reference matches hand-computed rows", "[attention]") {
  Rows r;
  r.m = model_of(plain_settings(), Compute::f32);
  SECTION("softmax weights, lse, the scale") {
    // One query [1, 2] against keys [1, 0] and [0, 1] at scale 0.5: logits 0.5 and 1.
    r.z = Sizes{1, 1, 1, 1, 2, 2, 1};
    r.scale = 0.5, r.q = {1, 2}, r.k = {1, 0, 0, 1}, r.v = {1, 3};
    r.run();
    const double e = std::exp(0.5);
    CHECK(r.a.o[0] == Approx((1 + 3 * e) / (1 + e)).epsilon(1e-15));
    CHECK(r.a.lse[0] == Approx(1 + std::log(1 + std::exp(-0.5))).epsilon(1e-15));
    CHECK(r.a.o_bound[0] > 0);
    CHECK(r.a.o_bound[0] < 1e-5);
  }
  SECTION("causal rows align bottom-right; rows without a key give 0 and -inf") {
    // sq 3, sk 2: row 0 sees no key, row 1 key 0, row 2 both.
    r.z = Sizes{1, 1, 1, 3, 2, 1, 1};
    r.causal = true, r.q = {1, 1, 1}, r.k = {0, 0}, r.v = {2, 4};
    r.run();
    CHECK(r.a.o[0] == 0);
    CHECK(r.a.lse[0] == -INFINITY);
    CHECK(std::isfinite(r.a.lse_alt[0]));  // -inf and nothing else
    CHECK(r.a.o[1] == Approx(2));
    CHECK(r.a.lse[1] == Approx(0).margin(1e-15));
    CHECK(r.a.o[2] == Approx(3));
    CHECK(r.a.lse[2] == Approx(std::log(2.0)));
    // sq < sk: the last row sees every key, the first sk - sq + 1.
    r.z = Sizes{1, 1, 1, 2, 3, 1, 1};
    r.q = {1, 1}, r.k = {0, 0, 0}, r.v = {3, 6, 9};
    r.run();
    CHECK(r.a.o[0] == Approx(4.5));
    CHECK(r.a.o[1] == Approx(6));
  }
  SECTION("grouped heads share consecutive key/value heads") {
    // hq 4 over hk 2: heads 0, 1 read kv head 0; heads 2, 3 kv head 1.
    r.z = Sizes{1, 4, 2, 1, 1, 1, 1};
    r.q = {1, 1, 1, 1}, r.k = {0, 0}, r.v = {5, 7};
    r.run();
    CHECK(r.a.o == std::vector<double>{5, 5, 7, 7});
  }
  SECTION("NaN in a masked key never reaches the row; in a visible key it does") {
    r.z = Sizes{1, 1, 1, 2, 2, 1, 1};
    r.causal = true, r.q = {1, 1}, r.k = {0, NAN}, r.v = {2, 4};
    r.run();
    CHECK(r.a.o[0] == Approx(2));  // row 0 sees key 0 only
    CHECK(std::isnan(r.a.o[1]));
    CHECK(std::isnan(r.a.lse[1]));
  }
  SECTION("every visible logit -inf: 0 and -inf, or NaN") {
    r.z = Sizes{1, 1, 1, 1, 2, 1, 1};
    r.q = {-INFINITY}, r.k = {1, 2}, r.v = {2, 4};
    r.run();
    CHECK(r.a.o[0] == 0);
    CHECK(std::isnan(r.a.o_alt[0]));
    CHECK(r.a.lse[0] == -INFINITY);
    CHECK(std::isnan(r.a.lse_alt[0]));
  }
  SECTION("empty_rows: nan") {
    Settings s;
    s.empty_nan = true;
    r.m = model_of(s, Compute::f32);
    r.z = Sizes{1, 1, 1, 2, 1, 1, 1};
    r.causal = true, r.q = {1, 1}, r.k = {0}, r.v = {2};
    r.run();
    CHECK(std::isnan(r.a.o[0]));
    CHECK(std::isnan(r.a.lse[0]));
    CHECK(r.a.lse_alt[0] == -INFINITY);
    CHECK(r.a.o[1] == Approx(2));
  }
}

TEST_CASE("attention bound: f32 arithmetic and P in f16 pass, planted errors do not", "[attention]") {
  // 8 keys of d 4 whose logits grow along the row (the max rises from
  // tile to tile); the kernel's answer computed as a flash kernel with
  // tiles of 4 would in f32, with P rounded to f16 or not. (Over long rows
  // of large logits the worst-case bound, which allows a rescaling per key
  // and d roundings per logit, is above the f16 P's error, which averages
  // out: the sweep's short rows are where that shortcut shows.)
  constexpr int64_t kKeys = 8, kTile = 4, kDim = 4;
  Rows r;
  r.z = Sizes{1, 1, 1, 1, kKeys, kDim, 1};
  r.scale = 0.5;
  uint64_t h = 7;
  auto draw = [&] { return double(int64_t((h = h * 6364136223846793005ull + 1442695040888963407ull) >> 40) % 2001 - 1000) / 500.0; };
  r.q.resize(kDim), r.k.resize(kKeys * kDim), r.v.resize(kKeys);
  for (double& x : r.q) x = 0.5 + std::fabs(draw());
  for (size_t i = 0; i < r.k.size(); ++i) r.k[i] = std::fabs(draw()) * double(1 + i / kDim) / 4.0;
  for (double& x : r.v) x = draw();
  auto kernel = [&](bool p_f16, bool no_rescale) {
    float m = -INFINITY, l = 0, acc = 0;
    for (int64_t t0 = 0; t0 < kKeys; t0 += kTile) {
      float m_new = m;
      std::vector<float> s;
      for (int64_t j = t0; j < t0 + kTile; ++j) {
        float dot = 0;
        for (int t = 0; t < kDim; ++t) dot += float(r.q[size_t(t)]) * float(r.k[size_t(j * kDim + t)]);
        s.push_back(dot * 0.5f);
        m_new = std::fmax(m_new, s.back());
      }
      const float alpha = no_rescale ? 1.0f : std::exp(m - m_new);
      l *= alpha, acc *= alpha;
      for (size_t jj = 0; jj < s.size(); ++jj) {
        float p = std::exp(s[jj] - m_new);
        if (p_f16) p = float(round_to(DType::f16, p));
        l += p, acc += p * float(r.v[size_t(t0) + jj]);
      }
      m = m_new;
    }
    return double(acc / l);
  };
  auto passes = [&](double got, const Settings& s) {
    r.m = model_of(s, Compute::f32);
    r.run();
    UNSCOPED_INFO("got " << got << ", reference " << r.a.o[0] << ", bound " << r.a.o_bound[0]);
    return std::fabs(got - r.a.o[0]) <= kDefaultScale * r.a.o_bound[0] + ulp_of(DType::f32, got);
  };
  Settings p16;
  p16.p_dtype = DType::f16;
  CHECK(passes(kernel(false, false), plain_settings()));
  CHECK(passes(kernel(true, false), p16));
  CHECK_FALSE(passes(kernel(true, false), plain_settings()));  // P in f16 without saying so
  CHECK_FALSE(passes(kernel(false, true), p16));               // the running max never rescaled
}

TEST_CASE("attention spec keys", "[attention]") {
  const Spec ok = spec_of(std::string(kF32) + "p_dtype: bf16\nempty_rows: nan\nmath: fast\n");
  const Settings s = read_settings(ok);
  CHECK(s.p_dtype == DType::bf16);
  CHECK(s.empty_nan);
  CHECK(s.math == softmax::Math::fast);
  CHECK(s.writes_lse);
  CHECK_FALSE(read_settings(spec_of("dtypes: {q: f16, k: f16, v: f16, o: f16}\nwrites: [o]\n")).writes_lse);
  CHECK_THROWS_WITH(spec_of(std::string(kF32) + "writes: [o]\n"), Catch::Contains("writes no lse"));
  CHECK_THROWS_WITH(spec_of("dtypes: {q: f32, k: f32, v: f32, o: f32}\n"), Catch::Contains("dtypes.lse"));
  CHECK_THROWS_WITH(spec_of(std::string(kF32) + "writes: [lse]\n"), Catch::Contains("must name o"));
  CHECK_THROWS_WITH(spec_of(std::string(kF32) + "writes: [o, p]\n"), Catch::Contains("not an output"));
  CHECK_THROWS_WITH(spec_of(std::string(kF32) + "p_dtype: f8\n"), Catch::Contains("p_dtype"));
  CHECK_THROWS_WITH(spec_of(kF32, "f16"), Catch::Contains("compute must be"));
  CHECK_THROWS_WITH(spec_of("dtypes: {q: f32, k: f32, v: f32, o: f32, lse: f16}\n"), Catch::Contains("lse must be f32"));
  CHECK_THROWS_WITH(spec_of(std::string(kF32) + "routing: {mode: x}\n"), Catch::Contains("routing"));
}

TEST_CASE("attention sweep covers the issue's edges and every case is valid", "[attention]") {
  const Spec spec = spec_of(kF32);
  const Op& op = op_of(spec);
  const auto cases = op.sweep(spec, 1, SweepTarget{BackendKind::host, 1e12});
  REQUIRE(cases.size() > 60);
  bool decode = false, empty_rows = false, ratio8 = false, d256 = false, other_scale = false, bshd = false;
  for (const Case& c : cases) {
    op.validate(c);
    const Parts p = parts_of(c);
    const Sizes& z = p.sizes;
    decode |= z.sq == 1 && z.sk > 64;
    empty_rows |= p.causal && z.sq > z.sk;
    ratio8 |= z.hq == 8 * z.hk;
    d256 |= z.d == 256;
    other_scale |= std::fabs(p.scale * std::sqrt(double(z.d)) - 1) > 0.01;
    bshd |= p.q.bshd;
  }
  CHECK(decode);
  CHECK(empty_rows);
  CHECK(ratio8);
  CHECK(d256);
  CHECK(other_scale);
  CHECK(bshd);
  // A kernel's own requires: d == 128 and causal only.
  const Spec fixed = spec_of(std::string(kF32) + "requires: [\"d == 128\", \"causal == 1\"]\n");
  for (const Case& c : op_of(fixed).sweep(fixed, 1, SweepTarget{BackendKind::host, 1e12})) {
    CHECK(c.size("d") == 128);
    CHECK(c.scalar("causal") == 1);
  }
}

TEST_CASE("attention fuzz codec and shrink hooks keep cases valid", "[attention]") {
  const Spec spec = spec_of(kF32);
  testing::check_codec(op_of(spec), spec, 5, 500, 24);
  CHECK_FALSE(op_of(spec).seed_cases(spec).empty());
  const Spec no_lse = spec_of("dtypes: {q: f16, k: f16, v: f16, o: f16}\nwrites: [o]\n");
  testing::check_codec(op_of(no_lse), no_lse, 6, 100, 24);
}

TEST_CASE("host attention zoo kernels get their expected verdicts", "[attention][samples]") {
  CHECK(testing::check_host_zoo("attention", testing::sample_gate_options(60), 12).planted >= 8);
}
