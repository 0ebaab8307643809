// The fp8_gemm family: the FP64 reference against a direct sum over k
// (block scales, MN-major scales, padded rows, n and k past a block), the
// bound against emulated kernels (f32 accumulation and a 14-bit tensor-core
// accumulator promoted every 128 pass; the same never promoted, a scale read
// for the wrong k-block, a skipped tail block fail), spec keys, the sweep and
// codec, DeepGEMM's metric, and every host zoo kernel through the gate.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "core/error.h"
#include "exec/patterns.h"
#include "ops/fp8_gemm/fp8_gemm_baselines.h"
#include "ops/fp8_gemm/fp8_gemm_reference.h"
#include "ops/fp8_gemm/fp8_gemm_sweep.h"
#include "ops/fp8_gemm/fp8_gemm_tolerance.h"
#include "ops/op.h"
#include "spec/spec.h"
#include "zoo_checks.h"

using namespace assay;
using namespace assay::fp8_gemm;

namespace {

std::filesystem::path spec_dir() {
  const auto dir = std::filesystem::temp_directory_path() / "assay-fp8-gemm-spec";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "k.cpp") << "\n";
  return dir;
}
Spec spec_of(const std::string& body, const char* op = "fp8_gemm") {
  return parse_spec("name: k\nop: " + std::string(op) + "\nbackend: host\nsource: k.cpp\ncompute: f32\n" + body,
                    spec_dir() / "k.yaml");
}
const char* kE4m3 = "dtypes: {a: e4m3, a_scale: f32, b: e4m3, b_scale: f32, d: bf16}\n";

// A case's tensors in host memory, inputs drawn by the op's recipes.
struct Drawn {
  std::unique_ptr<Backend> be = make_backend(BackendKind::host);
  Case c;
  std::vector<Buffer> buf;
  std::vector<const std::byte*> device;

  explicit Drawn(const Case& x) : c(x) {
    for (size_t i = 0; i < c.tensors.size(); ++i) {
      const TensorGeom g = c.geom(int(i));
      buf.push_back(be->allocate(size_t(std::max<int64_t>(g.span(), 1)) * dtype_bytes(g.dtype)));
      if (c.tensors[i].role == Role::input)
        be->fill_tensor(buf.back(), g, default_op("fp8_gemm")->params_for(c, int(i)), c.seed, uint32_t(i));
      else be->fill_pattern(buf.back(), poison_bits(g.dtype), dtype_bytes(g.dtype));
      device.push_back(buf.back().data);
    }
  }
  ~Drawn() {
    for (Buffer& b : buf) be->release(b);
  }
  double at(int t, int64_t r, int64_t col) const {
    const TensorGeom g = c.geom(t);
    return decode(g.dtype, load_bits(g.dtype, device[size_t(t)] + g.index(r, col) * dtype_bytes(g.dtype)));
  }
  // Writes d from a kernel emulation: value(i, j) in f32, stored in d's dtype.
  void write_d(const std::function<float(int64_t, int64_t)>& value) {
    const TensorGeom g = c.geom(D);
    for (int64_t i = 0; i < g.rows(); ++i)
      for (int64_t j = 0; j < g.cols(); ++j)
        store_bits(g.dtype, buf[D].data + g.index(i, j) * dtype_bytes(g.dtype), encode(g.dtype, double(value(i, j))));
  }
  CompareStats judge(const Settings& s) {
    const ErrorModel e = error_model(s, sizes_of(c).k, Subnormals::ieee);
    std::vector<const std::byte*> out(c.tensors.size(), nullptr);
    out[D] = buf[D].data;
    return compare_case(*be, c, device, out, e, tolerance(c, e, kDefaultScale), Deadline{}, nullptr, nullptr);
  }
};

// The 14-bit accumulator of the FP8 tensor core, emulated: the f32 sum's
// low 10 mantissa bits cleared (toward zero).
float trunc14(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u &= 0xfffffc00u;
  std::memcpy(&f, &u, 4);
  return f;
}

// A DeepGEMM-style kernel: each k-block's partial sum of a*b (14-bit when
// tc, else f32), times a_scale * b_scale, added into f32; `promote`: false
// keeps one 14-bit sum over all of k (scales applied per product);
// `scale_block(q, kb)`: which a_scale block block q reads.
float emulate(const Drawn& x, int64_t i, int64_t j, bool tc, bool promote = true,
              const std::function<int64_t(int64_t, int64_t)>& scale_block = {}) {
  const Sizes z = sizes_of(x.c);
  const int64_t kb = blocks(z.k);
  float acc = 0, all = 0;
  for (int64_t q = 0; q < kb; ++q) {
    const int64_t qa = scale_block ? scale_block(q, kb) : q;
    const float s = float(x.at(AS, i, qa)) * float(x.at(BS, j / kScaleBlock, q));
    float blk = 0;
    for (int64_t t = q * kScaleBlock; t < std::min(z.k, (q + 1) * kScaleBlock); ++t) {
      const float p = float(x.at(A, i, t)) * float(x.at(B, j, t));
      if (!promote) all = trunc14(all + p * s);
      else blk = tc ? trunc14(blk + p) : blk + p;
    }
    acc += blk * s;
  }
  return promote ? acc : all;
}

Case case_of(const Spec& spec, Sizes z, Recipe r, uint64_t seed) {
  Parts p = plain_parts(spec, z, "test");
  p.recipe = r, p.seed = seed;
  return make_case(p);
}

}  // namespace

TEST_CASE("fp8_gemm reference matches a direct sum over the dequantized blocks", "[fp8_gemm]") {
  const Spec spec = spec_of(kE4m3);
  for (Recipe r : kRecipes) {
    Parts p = plain_parts(spec, Sizes{3, 130, 300}, "test");  // nb 2, kb 3 with a tail
    p.recipe = r, p.seed = 11;
    p.a = rows::padded(8, 1), p.a_scale = rows::transposed(2, 1), p.b_scale = rows::transposed(), p.d = rows::padded(3);
    Drawn x(make_case(p));
    const std::vector<double> d = reference_arrays(*x.be, x.c, x.device)[D];
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 130; ++j) {
        long double sum = 0;
        for (int64_t t = 0; t < 300; ++t)
          sum += (long double)x.at(A, i, t) * x.at(AS, i, t / 128) * x.at(B, j, t) * x.at(BS, j / 128, t / 128);
        INFO(name(r) << " d[" << i << "," << j << "]");
        if (std::isnan(double(sum))) CHECK(std::isnan(d[size_t(i * 130 + j)]));
        else CHECK(d[size_t(i * 130 + j)] == Approx(double(sum)).epsilon(1e-12).margin(1e-300));
      }
  }
}

TEST_CASE("fp8_gemm bound: f32 and promoted tensor-core accumulation pass, planted errors do not", "[fp8_gemm]") {
  const Spec spec = spec_of(kE4m3);
  Settings f32, tc;
  tc.accumulate = Accumulate::fp8_tensor_core, tc.promote_every = 128;
  SECTION("correct accumulations pass under their declared settings") {
    for (Recipe r : kRecipes) {
      Drawn x(case_of(spec, Sizes{5, 140, 700}, r, 3));
      INFO(name(r));
      x.write_d([&](int64_t i, int64_t j) { return emulate(x, i, j, false); });
      CHECK(verdict_of(x.judge(f32)) == Verdict::pass);
      x.write_d([&](int64_t i, int64_t j) { return emulate(x, i, j, true); });
      CHECK(verdict_of(x.judge(tc)) == Verdict::pass);
    }
  }
  SECTION("a 14-bit accumulator is caught when the spec claims f32, and when never promoted") {
    // Short k and d in f32: the f32 bound is tight there and a bf16 d's own
    // ulp (2^-8) does not hide the accumulator's error.
    const Spec f32_out = spec_of("dtypes: {a: e4m3, a_scale: f32, b: e4m3, b_scale: f32, d: f32}\n");
    Drawn x(case_of(f32_out, Sizes{8, 64, 256}, Recipe::uniform, 5));
    x.write_d([&](int64_t i, int64_t j) { return emulate(x, i, j, true); });
    CHECK(verdict_of(x.judge(f32)) == Verdict::mismatch);
    CHECK(verdict_of(x.judge(tc)) == Verdict::pass);
    // Long k, positive data: one 14-bit sum over all of k drifts past the
    // bound of the promotion it claims.
    Drawn y(case_of(spec, Sizes{4, 64, 8192}, Recipe::offset, 5));
    y.write_d([&](int64_t i, int64_t j) { return emulate(y, i, j, true); });
    CHECK(verdict_of(y.judge(tc)) == Verdict::pass);
    y.write_d([&](int64_t i, int64_t j) { return emulate(y, i, j, true, false); });
    CHECK(verdict_of(y.judge(tc)) == Verdict::mismatch);
  }
  SECTION("a scale read for the wrong k-block, and a skipped tail block") {
    Drawn x(case_of(spec, Sizes{6, 130, 300}, Recipe::uniform, 7));
    x.write_d([&](int64_t i, int64_t j) {
      return emulate(x, i, j, false, true, [](int64_t q, int64_t kb) { return std::min(2 * q, kb - 1); });
    });
    CHECK(verdict_of(x.judge(f32)) == Verdict::mismatch);
    x.write_d([&](int64_t i, int64_t j) {  // the last 44 products left out
      float acc = 0;
      for (int64_t q = 0; q < 2; ++q) {
        float blk = 0;
        for (int64_t t = q * 128; t < (q + 1) * 128; ++t) blk += float(x.at(A, i, t)) * float(x.at(B, j, t));
        acc += blk * float(x.at(AS, i, q)) * float(x.at(BS, j / 128, q));
      }
      return acc;
    });
    CHECK(verdict_of(x.judge(f32)) == Verdict::mismatch);
  }
  SECTION("d left unwritten") {
    Drawn x(case_of(spec, Sizes{2, 3, 4}, Recipe::uniform, 1));
    CHECK(verdict_of(x.judge(f32)) == Verdict::unwritten_output);
  }
}

TEST_CASE("fp8_gemm spec keys", "[fp8_gemm]") {
  const Settings s = read_settings(spec_of(std::string(kE4m3) + "accumulate: fp8_tensor_core\npromote_every: 64\n"));
  CHECK(s.accumulate == Accumulate::fp8_tensor_core);
  CHECK(s.promote_every == 64);
  CHECK(read_settings(spec_of(kE4m3)).accumulate == Accumulate::f32);
  CHECK_NOTHROW(spec_of("dtypes: {a: e5m2, a_scale: f32, b: e4m3, b_scale: f32, d: f32}\n"));
  CHECK_THROWS_WITH(spec_of(std::string(kE4m3) + "promote_every: 128\n"), Catch::Contains("fp8_tensor_core only"));
  CHECK_THROWS_WITH(spec_of(std::string(kE4m3) + "accumulate: fp8_tensor_core\npromote_every: 100\n"),
                    Catch::Contains("promote_every"));
  CHECK_THROWS_WITH(spec_of(std::string(kE4m3) + "accumulate: f16\n"), Catch::Contains("accumulate"));
  CHECK_THROWS_WITH(parse_spec("name: k\nop: fp8_gemm\nbackend: host\nsource: k.cpp\ncompute: f16\n" + std::string(kE4m3),
                               spec_dir() / "k.yaml"),
                    Catch::Contains("compute must be f32"));
  CHECK_THROWS_WITH(spec_of("dtypes: {a: f16, a_scale: f32, b: e4m3, b_scale: f32, d: bf16}\n"),
                    Catch::Contains("e4m3 or e5m2"));
  CHECK_THROWS_WITH(spec_of("dtypes: {a: e4m3, a_scale: bf16, b: e4m3, b_scale: f32, d: bf16}\n"),
                    Catch::Contains("a_scale must be f32"));
  CHECK_THROWS_WITH(spec_of("dtypes: {a: e4m3, a_scale: f32, b: e4m3, b_scale: f32, d: e4m3}\n"),
                    Catch::Contains("d must be bf16 or f32"));
  CHECK_THROWS_WITH(spec_of("dtypes: {a: e4m3, a_scale: f32, b: e4m3, d: bf16}\n"), Catch::Contains("b_scale"));
  CHECK_THROWS_WITH(spec_of("dtypes: {a: e4m3, a_scale: f32, b: e4m3, b_scale: f32, d: bf16, c: f32}\n"),
                    Catch::Contains("no tensor"));
  // The other families take no FP8 tensors.
  CHECK_THROWS_WITH(spec_of("dtypes: {x: e4m3, y: f32}\n", "softmax"), Catch::Contains("FP8"));
  CHECK_THROWS_WITH(spec_of("dtypes: {a: e5m2, b: f32, c: f32}\n", "gemm"), Catch::Contains("FP8"));
}

TEST_CASE("fp8_gemm sweep covers the issue's edges and every case is valid", "[fp8_gemm]") {
  const Spec spec = spec_of(kE4m3);
  const Op& op = op_of(spec);
  const auto cases = op.sweep(spec, 1, SweepTarget{BackendKind::host, 1e12});
  REQUIRE(cases.size() > 40);
  bool k127 = false, k128 = false, k129 = false, k257 = false, n_tail = false, m_tail = false, long_positive = false;
  bool planted_max = false, specials = false, mn_major = false, padded = false;
  for (const Case& c : cases) {
    op.validate(c);
    const Parts p = parts_of(c);
    const Sizes& z = p.sizes;
    k127 |= z.k == 127, k128 |= z.k == 128, k129 |= z.k == 129, k257 |= z.k > 256 && z.k % 128 != 0;
    n_tail |= z.n > 128 && z.n % 128 != 0, m_tail |= z.m > 128 && z.m % 128 != 0;
    long_positive |= z.k >= 8192 && c.recipe == Recipe::offset;
    planted_max |= recipe_params(c, A).plant_value == 448.0;
    specials |= recipe_params(c, AS).plant_value == 0x1p100 && recipe_params(c, BS).plant_value < 0x1p-126 &&
                recipe_params(c, AS).row_value == 0.0 && recipe_params(c, AS).row_fill > 0;
    mn_major |= p.a_scale.col_major;
    padded |= p.a.pad > 0 && p.b.pad > 0 && p.d.pad > 0;
  }
  CHECK(k127);
  CHECK(k128);
  CHECK(k129);
  CHECK(k257);
  CHECK(n_tail);
  CHECK(m_tail);
  CHECK(long_positive);
  CHECK(planted_max);
  CHECK(specials);
  CHECK(mn_major);
  CHECK(padded);
  // A kernel's own requires: n % 64 == 0 and k % 128 == 0.
  const Spec fixed = spec_of(std::string(kE4m3) + "requires: [\"n % 64 == 0\", \"k % 128 == 0\"]\n");
  const auto fitted = op_of(fixed).sweep(fixed, 1, SweepTarget{BackendKind::host, 1e12});
  CHECK(fitted.size() > 20);
  for (const Case& c : fitted) {
    CHECK(c.size("n") % 64 == 0);
    CHECK(c.size("k") % 128 == 0);
  }
  for (uint64_t i = 0; i < 50; ++i)
    if (auto c = op.random_case(spec, 3, i, GenLimits{})) op.validate(*c);
}

TEST_CASE("fp8_gemm fuzz codec and shrink hooks keep cases valid", "[fp8_gemm]") {
  const Spec spec = spec_of(kE4m3);
  testing::check_codec(op_of(spec), spec, 5, 500, 20);
  CHECK_FALSE(op_of(spec).seed_cases(spec).empty());
  // The shrinker's cut reaches every input, the scales too: with no a_scale
  // element kept, every scale reads 0 and so does d.
  Case c = case_of(spec, Sizes{3, 5, 200}, Recipe::specials, 9);
  c.tensors[AS].keep.listed = 0;
  const Case again = make_case(parts_of(c));
  CHECK(again.tensors[AS].keep == c.tensors[AS].keep);
  Drawn x(again);
  const std::vector<std::vector<double>> ref = reference_arrays(*x.be, x.c, x.device);
  for (double v : ref[D]) CHECK((v == 0 || std::isnan(v)));
}

TEST_CASE("DeepGEMM's difference metric", "[fp8_gemm]") {
  const std::vector<double> x{1, -2, 3, 4}, y{1.001, -2.002, 3.003, 4.004}, z{0, 0, 0, 0};
  CHECK(deepgemm_difference(x, x) == Approx(0).margin(1e-15));
  CHECK(deepgemm_difference(x, y) < kDeepGemmThreshold);
  CHECK(deepgemm_difference(z, z) == 0);
  CHECK(deepgemm_difference(x, {-1, 2, -3, -4}) == Approx(2));
  // A scale applied twice to one row of four: the metric barely moves.
  CHECK(deepgemm_difference({1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1.05}) < kDeepGemmThreshold);
  CHECK_FALSE(deepgemm_difference(x, {1, -2, NAN, 4}) < kDeepGemmThreshold);
}

TEST_CASE("host fp8_gemm zoo kernels get their expected verdicts", "[fp8_gemm][samples]") {
  const testing::ZooCount n = testing::check_host_zoo("fp8_gemm", testing::sample_gate_options(60), 10);
  CHECK(n.planted >= 6);
  CHECK(n.correct >= 2);
}
