// The judge: element-wise comparison against the FP64 reference with the GEMM
// tolerance |c - ref| <= T * u_eff * bound + 1 ulp, exact matching for exact
// recipes, and NaN/Inf class and poison handling.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

#include "exec/patterns.h"
#include "judge/compare.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_tolerance.h"

using namespace assay;

namespace {

// One row of outputs of type t, compact, with its reference and bound.
struct Row {
  DType t;
  std::vector<std::byte> data;
  std::vector<double> ref, bound;
  explicit Row(DType type) : t(type) {}
  void add(double got, double reference, double bound_value) {
    add_bits(encode(t, got), reference, bound_value);
  }
  void add_bits(uint64_t bits, double reference, double bound_value) {
    data.resize(data.size() + size_t(dtype_bytes(t)));
    store_bits(t, data.data() + data.size() - size_t(dtype_bytes(t)), bits);
    ref.push_back(reference), bound.push_back(bound_value);
  }
  TensorGeom geom() const {
    int64_t n = int64_t(ref.size());
    return TensorGeom::matrix(t, 1, n, n, 1, 0);
  }
  CompareStats compare(const Tolerance& tol) const {
    return assay::compare(tol, geom(), data.data(), ref.data(), bound.data());
  }
};

gemm::Problem gemm_case(int64_t k, DType c_type, Recipe r = Recipe::uniform, double alpha = 1.3, double beta = 0.7) {
  gemm::Problem c;
  c.m = 1, c.n = 1, c.k = k;
  c.a_type = c.b_type = c.c_type = c_type;
  c.a = gemm::make_layout(c.m, c.k, false), c.b = gemm::make_layout(c.k, c.n, false);
  c.c = gemm::make_layout(c.m, c.n, false);
  c.recipe = r, c.alpha = alpha, c.beta = beta;
  return c;
}

Verdict judge(const Row& row, const Tolerance& tol) { return verdict_of(row.compare(tol)); }

}  // namespace

TEST_CASE("gemm::tolerance carries the accumulation length and the output type", "[compare]") {
  Tolerance t = gemm::tolerance(gemm_case(100, DType::f32), Compute::f32, 2.0, 0);
  CHECK(t.out == DType::f32);
  CHECK(t.scale == 2.0);
  // gamma-style bound: (k + a few roundings) * 2^-24; grows with k
  CHECK(t.u_eff >= 100 * std::ldexp(1.0, -24));
  CHECK(t.u_eff <= 110 * std::ldexp(1.0, -24));
  Tolerance t2 = gemm::tolerance(gemm_case(1000, DType::f32), Compute::f32, 2.0, 0);
  CHECK(t2.u_eff > 9 * t.u_eff);
  // computing f32 data in bf16 is much looser than in f32
  Tolerance tb = gemm::tolerance(gemm_case(100, DType::f32), Compute::bf16, 2.0, 0);
  CHECK(tb.u_eff > 100 * t.u_eff);
  // beta == 0: the output was poisoned, beta != 0: it held C0
  CHECK(gemm::tolerance(gemm_case(8, DType::f32, Recipe::uniform, 1, 0), Compute::f32, 2, 5).poisoned);
  CHECK_FALSE(gemm::tolerance(gemm_case(8, DType::f32, Recipe::uniform, 1, 1), Compute::f32, 2, 5).poisoned);
  // exact only for ints with integral scalars
  CHECK(gemm::tolerance(gemm_case(8, DType::f32, Recipe::ints, 1, 1), Compute::f32, 2, 0).exact);
  CHECK_FALSE(gemm::tolerance(gemm_case(8, DType::f32, Recipe::ints, 0.7, 1), Compute::f32, 2, 0).exact);
  CHECK_FALSE(gemm::tolerance(gemm_case(8, DType::f32, Recipe::uniform, 1, 1), Compute::f32, 2, 0).exact);
}

TEST_CASE("compare: the rounded reference and one ulp away pass", "[compare]") {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    INFO(name(t));
    gemm::Problem c = gemm_case(64, t);
    Tolerance tol = gemm::tolerance(c, Compute::f32, 2.0, poison_bits(t));
    for (double ref : {1.0 / 3.0, -7.123456789, 1e-3, 0.0, 1234.5678}) {
      INFO(ref);
      double expected = round_to(t, ref);
      double up = decode(t, encode(t, expected) + (expected >= 0 ? 1 : uint64_t(-1)));  // next away from/toward zero
      if (expected == 0) up = decode(t, 1);
      Row row(t);
      row.add(expected, ref, 0.0);     // bound 0: only the 1-ulp term is left
      row.add(up, ref, 0.0);
      CompareStats s = row.compare(tol);
      CHECK(s.checked == 2);
      CHECK(s.bad == 0);
      CHECK(verdict_of(s) == Verdict::pass);
      CHECK(s.max_ulps == 1);
      // three ulps with no bound to hide behind is a mismatch
      Row far(t);
      double three = expected;
      for (int i = 0; i < 3; ++i) three = std::nextafter(three, INFINITY);
      if (t != DType::f64) three = decode(t, encode(t, expected) + 3 * (expected >= 0 ? 1 : uint64_t(-1)));
      if (expected == 0) three = decode(t, 3);
      far.add(three, ref, 0.0);
      CHECK(judge(far, tol) == Verdict::mismatch);
    }
  }
}

TEST_CASE("compare: the boundary T*u_eff*bound + 1 ulp, constructed exactly", "[compare]") {
  // f32 output, expected 1.0; got = 1 + j*2^-23 with 1 < got < 2, so ulp(got) = 2^-23.
  gemm::Problem c = gemm_case(100, DType::f32);
  Tolerance tol = gemm::tolerance(c, Compute::f32, 2.0, poison_bits(DType::f32));
  const double bound = 1000.0;
  const double allowed = tol.scale * tol.u_eff * bound + std::ldexp(1.0, -23);
  const double ulp = std::ldexp(1.0, -23);
  // the largest j with j*ulp <= allowed: that is the last passing output
  const double j_max = std::floor(allowed / ulp);
  REQUIRE(j_max > 10);
  REQUIRE(j_max < 1e6);
  auto verdict_at = [&](double j, double sign) {
    Row row(DType::f32);
    double got = 1.0 + sign * j * (sign > 0 ? ulp : ulp / 2);  // below 1 the spacing is 2^-24
    REQUIRE(double(float(got)) == got);
    row.add(got, 1.0, bound);
    return judge(row, tol);
  };
  CHECK(verdict_at(j_max, +1) == Verdict::pass);
  CHECK(verdict_at(j_max - 1, +1) == Verdict::pass);
  CHECK(verdict_at(j_max + 1, +1) == Verdict::mismatch);
  CHECK(verdict_at(j_max + 100, +1) == Verdict::mismatch);
  // below 1.0 the error allowed is the same (its 1-ulp term uses max(|expected|, |got|) = 1)
  CHECK(verdict_at(2 * j_max, -1) == Verdict::pass);
  CHECK(verdict_at(2 * j_max + 1, -1) == Verdict::mismatch);
  // and the boundary really moves with the bound: 10x the bound lets 10x the error through
  Row wide(DType::f32);
  wide.add(1.0 + (j_max + 1) * ulp, 1.0, 10 * bound);
  CHECK(judge(wide, tol) == Verdict::pass);
  // ratio is reported relative to the allowed error
  Row r(DType::f32);
  r.add(1.0 + 2 * j_max * ulp, 1.0, bound);
  CompareStats s = r.compare(tol);
  REQUIRE(s.first_bad.size() == 1);
  CHECK(s.first_bad[0].ratio == Approx(2 * j_max * ulp / allowed));
  CHECK(s.first_bad[0].expected == 1.0);
  CHECK(s.first_bad[0].ulps == 2 * j_max);
}

TEST_CASE("compare: the scale T multiplies the bound term", "[compare]") {
  gemm::Problem c = gemm_case(100, DType::f32);
  Tolerance t2 = gemm::tolerance(c, Compute::f32, 2.0, 0);
  Tolerance t4 = gemm::tolerance(c, Compute::f32, 4.0, 0);
  const double ulp = std::ldexp(1.0, -23), bound = 1000;
  double j = std::floor((3.0 * t2.u_eff * bound + ulp) / ulp);  // between T=2 and T=4
  Row row(DType::f32);
  row.add(1.0 + j * ulp, 1.0, bound);
  CHECK(judge(row, t2) == Verdict::mismatch);
  CHECK(judge(row, t4) == Verdict::pass);
}

TEST_CASE("compare: NaN and infinity classes", "[compare]") {
  gemm::Problem c = gemm_case(16, DType::f32, Recipe::uniform, 1, 0);
  Tolerance tol = gemm::tolerance(c, Compute::f32, 2.0, poison_bits(DType::f32));
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  SECTION("a computed NaN where the reference is finite") {
    Row row(DType::f32);
    row.add(1.0, 1.0, 1.0);
    row.add(nan, 2.0, 1.0);
    CompareStats s = row.compare(tol);
    CHECK(s.bad == 1);
    CHECK(s.bad_class == 1);
    CHECK(s.unwritten == 0);
    CHECK(verdict_of(s) == Verdict::nan_mismatch);
    REQUIRE(s.first_bad.size() == 1);
    CHECK(s.first_bad[0].col == 1);
  }
  SECTION("a finite value where the reference is NaN") {
    Row row(DType::f32);
    row.add(0.0, nan, 1.0);
    CHECK(judge(row, tol) == Verdict::nan_mismatch);
  }
  SECTION("NaN where NaN is expected passes, the payload does not matter") {
    Row row(DType::f32);
    row.add_bits(0x7fc00001u, nan, 1.0);
    row.add_bits(0xffc00000u, nan, 1.0);
    CHECK(judge(row, tol) == Verdict::pass);
  }
  SECTION("+Inf against -Inf") {
    Row row(DType::f32);
    row.add(-inf, inf, 1.0);
    CHECK(judge(row, tol) == Verdict::nan_mismatch);
    Row same(DType::f32);
    same.add(inf, inf, 1.0);
    same.add(-inf, -inf, 1.0);
    CHECK(judge(same, tol) == Verdict::pass);
  }
  SECTION("Inf for a finite result that does not overflow the output") {
    Row row(DType::f32);
    row.add(inf, 3.0e38, 3.0e38);
    CHECK(judge(row, tol) == Verdict::nan_mismatch);
  }
  SECTION("Inf for a finite result that overflows the output type passes") {
    Row row(DType::f16);
    Tolerance t16 = gemm::tolerance(gemm_case(16, DType::f16, Recipe::uniform, 1, 0), Compute::f32, 2, poison_bits(DType::f16));
    row.add(inf, 70000.0, 70000.0);   // rounds to +Inf in f16
    CHECK(judge(row, t16) == Verdict::pass);
    Row wrong_sign(DType::f16);
    wrong_sign.add(-inf, 70000.0, 70000.0);
    CHECK(judge(wrong_sign, t16) == Verdict::nan_mismatch);
  }
}

TEST_CASE("compare: poisoned elements are unwritten output", "[compare]") {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::f64}) {
    INFO(name(t));
    gemm::Problem c = gemm_case(16, t, Recipe::uniform, 1, 0);
    Tolerance tol = gemm::tolerance(c, Compute::f32, 2.0, poison_bits(t));
    REQUIRE(tol.poisoned);
    REQUIRE(tol.poison == poison_bits(t));
    Row row(t);
    row.add(0.5, 0.5, 1.0);
    row.add_bits(poison_bits(t), 0.25, 1.0);
    row.add(std::nan(""), 1.0, 1.0);  // a NaN class error too: unwritten still wins
    CompareStats s = row.compare(tol);
    CHECK(s.unwritten == 1);
    CHECK(s.bad == 2);
    CHECK(verdict_of(s) == Verdict::unwritten_output);
    // the same bits are just a NaN when the output was not poisoned
    Tolerance held = tol;
    held.poisoned = false;
    CompareStats s2 = row.compare(held);
    CHECK(s2.unwritten == 0);
    CHECK(verdict_of(s2) == Verdict::nan_mismatch);
  }
}

TEST_CASE("compare: exact recipes must match bit for bit while the bound fits", "[compare]") {
  gemm::Problem c = gemm_case(64, DType::f32, Recipe::ints, 1, 1);
  Tolerance tol = gemm::tolerance(c, Compute::f32, 2.0, poison_bits(DType::f32));
  REQUIRE(tol.exact);
  REQUIRE(tol.exact_bits == 24);
  const double limit = std::ldexp(1.0, tol.exact_bits);
  const double off = std::nextafter(100.0f, 200.0f);  // 100 + 1 ulp of f32
  SECTION("exact value passes") {
    Row row(DType::f32);
    row.add(100.0, 100.0, 1000.0);
    CompareStats s = row.compare(tol);
    CHECK(verdict_of(s) == Verdict::pass);
    CHECK(s.exact_checked == 1);
  }
  SECTION("one ulp off fails with a small bound and at the limit") {
    Row row(DType::f32);
    row.add(off, 100.0, 1000.0);
    CHECK(judge(row, tol) == Verdict::mismatch);
    Row at_limit(DType::f32);
    at_limit.add(off, 100.0, limit);
    CHECK(judge(at_limit, tol) == Verdict::mismatch);
  }
  SECTION("the same ulp passes once the bound exceeds 2^exact_bits or the recipe is inexact") {
    Row row(DType::f32);
    row.add(off, 100.0, 2 * limit);
    CompareStats s = row.compare(tol);
    CHECK(s.exact_checked == 0);
    CHECK(verdict_of(s) == Verdict::pass);
    Tolerance loose = gemm::tolerance(gemm_case(64, DType::f32, Recipe::uniform, 1, 1), Compute::f32, 2.0, 0);
    Row r2(DType::f32);
    r2.add(off, 100.0, 1000.0);
    CHECK(judge(r2, loose) == Verdict::pass);
  }
  SECTION("f16 output: exact bits are f16's") {
    Tolerance t16 = gemm::tolerance(gemm_case(64, DType::f16, Recipe::ints, 1, 0), Compute::f32, 2.0, 0);
    CHECK(t16.exact_bits == 11);
    Row row(DType::f16);
    row.add(101.0, 100.0, 2000.0);  // 16 ulps: f16's ulp at 100 is 2^-4
    row.add(100.0 + 0.0625, 100.0, 2000.0);
    CompareStats s = row.compare(t16);
    CHECK(s.bad == 2);
    CHECK(verdict_of(s) == Verdict::mismatch);
  }
}

TEST_CASE("ulp_of uses the subnormal spacing below the smallest normal", "[compare]") {
  CHECK(ulp_of(DType::f32, 1.0) == std::ldexp(1.0, -23));
  CHECK(ulp_of(DType::f32, 1.5) == std::ldexp(1.0, -23));
  CHECK(ulp_of(DType::f32, 2.0) == std::ldexp(1.0, -22));
  CHECK(ulp_of(DType::f32, -3.0) == std::ldexp(1.0, -22));
  CHECK(ulp_of(DType::f32, std::ldexp(1.0, -126)) == std::ldexp(1.0, -149));
  CHECK(ulp_of(DType::f32, std::ldexp(1.0, -130)) == std::ldexp(1.0, -149));
  CHECK(ulp_of(DType::f16, 1.0) == std::ldexp(1.0, -10));
  CHECK(ulp_of(DType::f16, 65504.0) == 32.0);
  CHECK(ulp_of(DType::f16, std::ldexp(1.0, -14)) == std::ldexp(1.0, -24));
  CHECK(ulp_of(DType::f16, 1e-6) == std::ldexp(1.0, -24));
  CHECK(ulp_of(DType::bf16, 1.0) == std::ldexp(1.0, -7));
  CHECK(ulp_of(DType::bf16, 1e-39) == std::ldexp(1.0, -133));
  CHECK(ulp_of(DType::f64, 1.0) == std::ldexp(1.0, -52));
  CHECK(ulp_of(DType::f64, 1e-310) == std::ldexp(1.0, -1074));
  // ulp_of agrees with the distance to the next value of the type
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    for (uint64_t bits : {uint64_t(1), uint64_t(5), uint64_t(0x0300), uint64_t(0x0400), uint64_t(0x3c00), uint64_t(0x3f80)}) {
      double x = decode(t, bits), next = decode(t, bits + 1);
      INFO(name(t) << " bits " << bits);
      CHECK(ulp_of(t, x) == next - x);
    }
  }
}

TEST_CASE("ulp_of(0) is the smallest subnormal, as for any value below the smallest normal", "[compare]") {
  // compare.h: "Spacing of t around |x| (the subnormal spacing below the
  // smallest normal)". Zero is below the smallest normal; the spacing around
  // it is the distance to the smallest subnormal.
  CHECK(ulp_of(DType::f32, 0.0) == std::ldexp(1.0, -149));
  CHECK(ulp_of(DType::f16, 0.0) == std::ldexp(1.0, -24));
  CHECK(ulp_of(DType::bf16, 0.0) == std::ldexp(1.0, -133));
  CHECK(ulp_of(DType::f64, 0.0) == std::ldexp(1.0, -1074));
  CHECK(ulp_of(DType::f32, -0.0) == std::ldexp(1.0, -149));
}

TEST_CASE("ulp_distance counts representable values, across zero", "[compare]") {
  const double s32 = std::ldexp(1.0, -149), s16 = std::ldexp(1.0, -24), sb = std::ldexp(1.0, -133);
  CHECK(ulp_distance(DType::f32, s32, -s32) == 2);
  CHECK(ulp_distance(DType::f32, -s32, 2 * s32) == 3);
  CHECK(ulp_distance(DType::f32, 0.0, -0.0) == 0);
  CHECK(ulp_distance(DType::f32, 0.0, s32) == 1);
  CHECK(ulp_distance(DType::f16, s16, -s16) == 2);
  CHECK(ulp_distance(DType::f16, -1.0, 1.0) == 2 * 0x3c00);
  CHECK(ulp_distance(DType::bf16, -sb, 3 * sb) == 4);
  CHECK(ulp_distance(DType::f32, 1.0, std::nextafter(1.0f, 2.0f)) == 1);
  CHECK(ulp_distance(DType::f32, 1.0, std::nextafter(1.0f, 0.0f)) == 1);
  CHECK(ulp_distance(DType::f64, -std::ldexp(1.0, -1074), std::ldexp(1.0, -1074)) == 2);
  CHECK(std::isinf(ulp_distance(DType::f32, std::nan(""), 1.0)));
  // symmetric
  CHECK(ulp_distance(DType::f16, 3.0, -0.5) == ulp_distance(DType::f16, -0.5, 3.0));
}

// Spec `subnormals: flush` (docs/tolerance.md): results a flushing kernel may
// give pass; the same results fail under the default `ieee` contract.
TEST_CASE("compare: subnormals flush admits flushed results, ieee does not", "[compare]") {
  const double tiny = std::ldexp(1.0, -149), fmin = std::ldexp(1.0, -126);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  gemm::Problem c = gemm_case(4, DType::f32, Recipe::uniform, 1, 0);
  const Tolerance ieee = gemm::tolerance(c, Compute::f32, 2.0, poison_bits(DType::f32));
  const Tolerance flush = gemm::tolerance(c, Compute::f32, 2.0, poison_bits(DType::f32), Subnormals::flush);
  CHECK(ieee.abs_extra == 0);
  CHECK(ieee.abs_floor == Approx(3 * tiny));  // IEEE underflow: 4 products, alpha*acc, beta*C0, half an ulp each
  CHECK_FALSE(ieee.inf_may_be_nan);
  CHECK(flush.abs_extra > 0);
  CHECK(flush.abs_extra < 64 * fmin);  // k = 4, |a|, |b| < 1: a few dozen FLT_MIN at most
  SECTION("a subnormal result flushed to +0 or -0") {
    // Larger than what IEEE underflow of k = 4 products and the epilogue can
    // lose (3 of 2^-149, Tolerance::abs_floor), still subnormal.
    Row row(DType::f32);
    row.add(0.0, 40 * tiny, 40 * tiny);
    row.add(-0.0, -50 * tiny, 50 * tiny);
    CHECK(judge(row, ieee) == Verdict::mismatch);
    CHECK(judge(row, flush) == Verdict::pass);
  }
  SECTION("a normal result made of products of flushed subnormal inputs") {
    // four products 2^-127 * 0.75: each input subnormal, the sum 1.5 FLT_MIN is normal
    Row row(DType::f32);
    row.add(0.0, 1.5 * fmin, 1.5 * fmin);
    CHECK(judge(row, ieee) == Verdict::mismatch);
    CHECK(judge(row, flush) == Verdict::pass);
  }
  SECTION("NaN for an infinite reference: a flushed factor times Inf") {
    Row row(DType::f32);
    row.add(nan, inf, inf);
    CHECK(judge(row, ieee) == Verdict::nan_mismatch);
    CHECK(judge(row, flush) == Verdict::pass);
  }
  SECTION("flush excuses nothing else") {
    Row wrong(DType::f32);
    wrong.add(0.5, 1.0, 1.0);
    CHECK(judge(wrong, flush) == Verdict::mismatch);
    Row above(DType::f32);  // well above anything flushing can lose
    above.add(0.0, 1e-30, 1e-30);
    CHECK(judge(above, flush) == Verdict::mismatch);
    Row finite_for_nan(DType::f32);
    finite_for_nan.add(0.0, nan, 1.0);
    CHECK(judge(finite_for_nan, flush) == Verdict::nan_mismatch);
    Row wrong_inf(DType::f32);
    wrong_inf.add(-inf, inf, inf);
    CHECK(judge(wrong_inf, flush) == Verdict::nan_mismatch);
  }
  SECTION("an f16 output may be zero where the reference is an f16 subnormal") {
    gemm::Problem h = gemm_case(4, DType::f16, Recipe::uniform, 1, 0);
    Row row(DType::f16);
    row.add(0.0, std::ldexp(3.0, -24), std::ldexp(3.0, -24));
    CHECK(judge(row, gemm::tolerance(h, Compute::f32, 2.0, poison_bits(DType::f16))) == Verdict::mismatch);
    CHECK(judge(row, gemm::tolerance(h, Compute::f32, 2.0, poison_bits(DType::f16), Subnormals::flush)) ==
          Verdict::pass);
  }
}

TEST_CASE("flush_allowance grows with k, |alpha|, |beta| and the recipes' magnitudes", "[compare]") {
  const double fmin = std::ldexp(1.0, -126);
  gemm::Problem c = gemm_case(100, DType::f32, Recipe::uniform, 1, 0);
  // k (mu M_B + mu M_A + 2 mu) + 3 mu + mu(C), all mu = FLT_MIN, M = 1
  CHECK(gemm::flush_allowance(c, Compute::f32) == Approx(404 * fmin));
  gemm::Problem big = gemm_case(1000, DType::f32, Recipe::uniform, -1.3, 0.7);
  CHECK(gemm::flush_allowance(big, Compute::f32) > gemm::flush_allowance(c, Compute::f32));
  gemm::Problem mixed = gemm_case(100, DType::f32, Recipe::mixed, 1, 0);
  CHECK(gemm::flush_allowance(mixed, Compute::f32) > gemm::flush_allowance(c, Compute::f32));
  // f64 arithmetic flushes below 2^-1022 only
  gemm::Problem d = gemm_case(100, DType::f64, Recipe::uniform, 1, 0);
  CHECK(gemm::flush_allowance(d, Compute::f64) < 1e-300);
}

// Narrow compute (docs/tolerance.md): a kernel that converts its inputs into
// a compute type narrower than their storage type, correctly rounded, passes
// under `subnormals: ieee`; the same results still fail where the spec claims
// the storage type's own precision.
TEST_CASE("compare: converting inputs into a narrower compute type is modelled, not excused for f32", "[compare]") {
  const double tiny = 11 * std::ldexp(1.0, -149);  // an f32 subnormal below TF32's grid (2^-136)
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // k = 1: IEEE underflow of one product and the epilogue can lose 1.5 ulps
  // of 2^-149 (Tolerance::abs_floor), far less than the TF32 conversion.
  gemm::Problem c = gemm_case(1, DType::f32, Recipe::specials, 1, 0);
  const Tolerance f32 = gemm::tolerance(c, Compute::f32, 2.0, poison_bits(DType::f32));
  const Tolerance tf32 = gemm::tolerance(c, Compute::tf32, 2.0, poison_bits(DType::f32));
  SECTION("a subnormal input rounded to 0 in TF32: the result loses it") {
    Row row(DType::f32);
    row.add(0.0, tiny * 0.7, tiny * 0.7);
    CHECK(judge(row, tf32) == Verdict::pass);
    CHECK(judge(row, f32) == Verdict::mismatch);
    CHECK(tf32.abs_floor < std::ldexp(1.0, -126));  // only the bottom of the range is excused
    Row big(DType::f32);
    big.add(1e-30, 0.0, 0.0);
    CHECK(judge(big, tf32) == Verdict::mismatch);
  }
  SECTION("an input that overflows at conversion: the class of the converted reference also counts") {
    Row row(DType::f32);
    row.add(nan, -inf, inf);  // f32 reference -Inf; in TF32 an input near FLT_MAX became +Inf: Inf - Inf
    const double class_nan[] = {nan};
    const std::vector<const double*> class_ref = {class_nan};
    CHECK(verdict_of(compare(tf32, row.geom(), row.data.data(), row.ref.data(), row.bound.data(), nullptr,
                             class_ref)) == Verdict::pass);
    CHECK(judge(row, tf32) == Verdict::nan_mismatch);  // without the converted reference
    const double minus_one[] = {-1.0};
    const std::vector<const double*> finite_ref = {minus_one};  // a finite one excuses no class change
    CHECK(verdict_of(compare(tf32, row.geom(), row.data.data(), row.ref.data(), row.bound.data(), nullptr,
                             finite_ref)) == Verdict::nan_mismatch);
    Row finite(DType::f32);
    finite.add(inf, 3.0e38, 3.0e38);  // f32 reference finite, converted reference +Inf
    const double plus_inf[] = {inf}, minus_inf[] = {-inf};
    const std::vector<const double*> inf_ref = {minus_one, plus_inf};  // either of several counts
    CHECK(verdict_of(compare(tf32, finite.geom(), finite.data.data(), finite.ref.data(), finite.bound.data(), nullptr,
                             inf_ref)) == Verdict::pass);
    const std::vector<const double*> minus_inf_ref = {minus_inf};
    CHECK(verdict_of(compare(tf32, finite.geom(), finite.data.data(), finite.ref.data(), finite.bound.data(),
                             nullptr, minus_inf_ref)) == Verdict::nan_mismatch);
  }
  SECTION("an f16 accumulator overflows past 65504, an f32 one does not") {
    gemm::Problem u = gemm_case(16, DType::f32, Recipe::mixed, 1, 0);
    const Tolerance f16 = gemm::tolerance(u, Compute::f16, 2.0, poison_bits(DType::f32));
    const Tolerance f32u = gemm::tolerance(u, Compute::f32, 2.0, poison_bits(DType::f32));
    Row row(DType::f32);
    row.add(inf, 1.0, 1e5);  // partial sums of |a||b| reach 1e5: past f16's range
    CHECK(judge(row, f16) == Verdict::pass);
    CHECK(judge(row, f32u) == Verdict::nan_mismatch);
    Row small(DType::f32);
    small.add(inf, 1.0, 6e4);  // within f16's range: no excuse
    CHECK(judge(small, f16) == Verdict::nan_mismatch);
  }
}

TEST_CASE("needs_class_reference: only where conversion can change a class", "[compare]") {
  gemm::Problem c = gemm_case(16, DType::f32, Recipe::specials, 1, 0);
  CHECK(gemm::needs_class_reference(c, Compute::tf32));
  CHECK(gemm::needs_class_reference(c, Compute::bf16));
  CHECK(gemm::needs_class_reference(c, Compute::f16));
  CHECK_FALSE(gemm::needs_class_reference(c, Compute::f32));  // nothing converts
  c.recipe = Recipe::uniform;
  CHECK_FALSE(gemm::needs_class_reference(c, Compute::tf32));  // [-1, 1): nothing overflows, no Inf to meet
  c.recipe = Recipe::mixed;                                     // f32 mixed draws up to 2^24
  CHECK(gemm::needs_class_reference(c, Compute::f16));          // past 65504
  CHECK_FALSE(gemm::needs_class_reference(c, Compute::tf32));   // far inside f32's range
  gemm::Problem h = gemm_case(16, DType::f16, Recipe::specials, 1, 0);
  CHECK_FALSE(gemm::needs_class_reference(h, Compute::f32));    // f16 fits f32 exactly
  CHECK(gemm::converts(DType::f16, Compute::bf16));             // fewer bits
  CHECK_FALSE(gemm::converts(DType::f16, Compute::tf32));       // f16 fits TF32 exactly
  CHECK(gemm::converts(DType::bf16, Compute::f16));             // a narrower range
}

// N-D tensors (core/tensor_geom.h): the matrix view's rows are the index
// combinations of the leading dimensions in row-major order, its columns the
// last dimension; padded strides are honoured and span() reaches the last
// element exactly.
TEST_CASE("TensorGeom: a padded 3-D tensor's (row, col) map to the right element, span() to one past the last",
          "[compare][geom]") {
  SECTION("row-major inner dimensions, both outer strides padded, a base offset") {
    TensorGeom g;  // shape [2, 3, 4], strides [20, 5, 1] (compact would be [12, 4, 1]), offset 3
    g.dtype = DType::f32, g.ndim = 3, g.offset = 3;
    const int64_t shape[3] = {2, 3, 4}, strides[3] = {20, 5, 1};
    for (int d = 0; d < 3; ++d) g.shape[d] = shape[d], g.strides[d] = strides[d];
    CHECK(g.rows() == 6);
    CHECK(g.cols() == 4);
    CHECK(g.count() == 24);
    CHECK(g.dim_rows() == 3);
    CHECK(g.row_stride() == 5);
    CHECK(g.col_stride() == 1);
    CHECK(g.row_major());
    CHECK_FALSE(g.col_major());
    CHECK_FALSE(g.contiguous());  // padded
    CHECK(g.span() == 3 + 1 * 20 + 2 * 5 + 3 * 1 + 1);
    CHECK(g.index(0, 0) == 3);
    CHECK(g.index(2, 3) == 3 + 2 * 5 + 3);       // last row of the first 3 x 4 slab
    CHECK(g.index(3, 0) == 3 + 20);              // first row of the second slab: the outer stride, not 3 * 5
    CHECK(g.index(4, 2) == 3 + 20 + 5 + 2);
    CHECK(g.index(5, 3) == g.span() - 1);        // the last element is the span's last
    std::set<int64_t> seen;
    for (int64_t r = 0; r < g.rows(); ++r)
      for (int64_t c = 0; c < g.cols(); ++c) {
        INFO(r << ", " << c);
        CHECK(g.index(r, c) == 3 + (r / 3) * 20 + (r % 3) * 5 + c);
        CHECK(g.index(r, c) < g.span());
        seen.insert(g.index(r, c));
      }
    CHECK(seen.size() == 24);  // no two elements alias
    CHECK_FALSE(g.uniform_row_stride().has_value());  // row 3 is 20 on, not 3 * 5: the dimensions are walked
    TensorGeom compact = g;
    compact.strides[0] = 12, compact.strides[1] = 4, compact.offset = 0;
    CHECK(compact.contiguous());
    CHECK(compact.span() == 24);
    REQUIRE(compact.uniform_row_stride() == 4);
    for (int64_t r = 0; r < compact.rows(); ++r)
      for (int64_t c = 0; c < compact.cols(); ++c) CHECK(compact.index(r, c) == r * 4 + c);
    TensorGeom evenly = g;  // rows 5 apart throughout, the last one's padding too: [2, 3, 4] strides [15, 5, 1]
    evenly.strides[0] = 15;
    REQUIRE(evenly.uniform_row_stride() == 5);
    for (int64_t r = 0; r < evenly.rows(); ++r)
      for (int64_t c = 0; c < evenly.cols(); ++c) CHECK(evenly.index(r, c) == 3 + r * 5 + c);
    TensorGeom one_slab = g;  // an outer dimension of one element adds nothing, whatever its stride
    one_slab.shape[0] = 1, one_slab.strides[0] = 999;
    CHECK(one_slab.uniform_row_stride() == 5);
    TensorGeom one_row = g;  // [2, 1, 4]: the rows are the outer dimension's, 20 apart
    one_row.shape[1] = 1;
    REQUIRE(one_row.uniform_row_stride() == 20);
    CHECK(one_row.index(1, 2) == 3 + 20 + 2);
  }
  SECTION("column-major inner dimensions, a padded outer stride") {
    TensorGeom g;  // shape [2, 3, 4], strides [16, 1, 3]: each 3 x 4 slab column-major, 12 elements, 4 of gap
    g.dtype = DType::f16, g.ndim = 3;
    const int64_t shape[3] = {2, 3, 4}, strides[3] = {16, 1, 3};
    for (int d = 0; d < 3; ++d) g.shape[d] = shape[d], g.strides[d] = strides[d];
    CHECK(g.col_major());
    CHECK_FALSE(g.row_major());
    CHECK(g.row_stride() == 1);
    CHECK(g.col_stride() == 3);
    CHECK(g.span() == 16 + 2 + 9 + 1);
    for (int64_t r = 0; r < g.rows(); ++r)
      for (int64_t c = 0; c < g.cols(); ++c) CHECK(g.index(r, c) == (r / 3) * 16 + (r % 3) + c * 3);
    CHECK(g.index(5, 3) == g.span() - 1);
    CHECK_FALSE(g.uniform_row_stride().has_value());  // slabs 16 apart, rows 1 apart within one
  }
  SECTION("1-D and 0-D tensors are one row") {
    TensorGeom v;  // shape [5], stride 2, offset 1
    v.ndim = 1, v.shape[0] = 5, v.strides[0] = 2, v.offset = 1;
    CHECK(v.rows() == 1);
    CHECK(v.cols() == 5);
    CHECK(v.index(0, 3) == 7);
    CHECK(v.span() == 10);
    TensorGeom s;
    s.ndim = 0, s.offset = 4;
    CHECK(s.rows() == 1);
    CHECK(s.cols() == 1);
    CHECK(s.index(0, 0) == 4);
    CHECK(s.span() == 5);
    CHECK(v.uniform_row_stride() == 0);
    CHECK(s.uniform_row_stride() == 0);
  }
  SECTION("an empty dimension: no elements, span is the offset") {
    TensorGeom e;
    e.ndim = 3, e.offset = 7;
    const int64_t shape[3] = {2, 0, 4}, strides[3] = {20, 5, 1};
    for (int d = 0; d < 3; ++d) e.shape[d] = shape[d], e.strides[d] = strides[d];
    CHECK(e.count() == 0);
    CHECK(e.span() == 7);
  }
}

TEST_CASE("compare reads a padded 3-D output through its strides and reports the bad element's (row, col)",
          "[compare][geom]") {
  TensorGeom g;  // shape [2, 3, 4], strides [20, 5, 1], offset 3
  g.dtype = DType::f32, g.ndim = 3, g.offset = 3;
  const int64_t shape[3] = {2, 3, 4}, strides[3] = {20, 5, 1};
  for (int d = 0; d < 3; ++d) g.shape[d] = shape[d], g.strides[d] = strides[d];
  // Every byte NaN first: padding and offset hold garbage the comparison must not read.
  std::vector<std::byte> buf(size_t(g.span()) * 4);
  for (int64_t i = 0; i < g.span(); ++i) store_bits(DType::f32, buf.data() + i * 4, encode(DType::f32, std::nan("")));
  std::vector<double> ref(size_t(g.count())), bound(size_t(g.count()), 1.0);
  for (int64_t r = 0; r < g.rows(); ++r)
    for (int64_t c = 0; c < g.cols(); ++c) {
      ref[size_t(r * g.cols() + c)] = double(r * 10 + c);
      store_bits(DType::f32, buf.data() + g.index(r, c) * 4, encode(DType::f32, double(r * 10 + c)));
    }
  gemm::Problem p = gemm_case(4, DType::f32, Recipe::uniform, 1, 0);
  Tolerance tol = gemm::tolerance(p, Compute::f32, 2.0, poison_bits(DType::f32));
  CompareStats ok = compare(tol, g, buf.data(), ref.data(), bound.data());
  CHECK(ok.checked == 24);
  CHECK(verdict_of(ok) == Verdict::pass);
  // One wrong element in the second slab: reported at its matrix-view position.
  store_bits(DType::f32, buf.data() + g.index(4, 2) * 4, encode(DType::f32, 1000.0));
  CompareStats bad = compare(tol, g, buf.data(), ref.data(), bound.data());
  CHECK(verdict_of(bad) == Verdict::mismatch);
  CHECK(bad.bad == 1);
  REQUIRE(bad.first_bad.size() == 1);
  CHECK(bad.first_bad[0].row == 4);
  CHECK(bad.first_bad[0].col == 2);
  CHECK(bad.first_bad[0].got == 1000.0);
  CHECK(bad.first_bad[0].expected == 42.0);
}

TEST_CASE("compare: integer outputs are exact, poison is unwritten, no NaN class", "[compare]") {
  const uint64_t poison = poison_bits(DType::i64);
  // The poison is no index a kernel computes, and differs from a 32-bit index
  // left in the low word with the poison's high word kept.
  CHECK(int64_t(poison) < -(int64_t(1) << 60));
  Row r(DType::i64);
  r.add(3, 3, 0);       // exact
  r.add(4, 3, 1e9);     // off by one: fails whatever the bound
  r.add_bits(poison, 7, 0);
  r.add_bits((poison & 0xffffffff00000000ull) | 7u, 7, 0);  // an int32 store into an int64: wrong
  Tolerance tol;
  tol.out = DType::i64, tol.poisoned = true, tol.poison = poison, tol.u_eff = 1, tol.scale = 2;
  const CompareStats s = compare(tol, r.geom(), r.data.data(), r.ref.data(), r.bound.data());
  CHECK(s.checked == 4);
  CHECK(s.bad == 3);
  CHECK(s.unwritten == 1);
  CHECK(s.bad_class == 0);
  CHECK(verdict_of(s) == Verdict::unwritten_output);
  CHECK(ulp_of(DType::i64, 1e6) == 1.0);
  CHECK(ulp_distance(DType::i64, 3, 10) == 7.0);
}
