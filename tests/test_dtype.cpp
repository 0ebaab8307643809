// Storage types: encode rounds a double to nearest-even exactly once, decode is
// its inverse on every stored pattern. f16 is checked against GCC's _Float16
// conversion (libgcc's soft-float, correctly rounded), every type against an
// independent reference rounding written here with exact double arithmetic.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

#include "assay/abi.h"
#include "core/dtype.h"

using namespace assay;

namespace {

// Format parameters: p significand bits (with the implicit one), emin the
// smallest normal exponent, emax the largest.
struct Format {
  int p, emin, emax;
  double max_finite() const { return std::ldexp(2.0 - std::ldexp(1.0, 1 - p), emax); }
};
constexpr Format kF32{24, -126, 127};
constexpr Format kF16{11, -14, 15};
constexpr Format kBF16{8, -126, 127};

// Reference rounding of d to the format, nearest with ties to even, computed
// with exact operations only: scale |d| by a power of two so the kept bits are
// the integer part, round that integer, scale back.
double reference_round(double d, const Format& f) {
  if (std::isnan(d)) return d;
  if (std::isinf(d) || d == 0) return d;
  double a = std::fabs(d);
  int e = 0;
  std::frexp(a, &e);                        // a in [2^(e-1), 2^e)
  int exp = std::max(e - 1, f.emin);        // subnormals share emin's spacing
  double ulp = std::ldexp(1.0, exp - (f.p - 1));
  double q = a / ulp;                       // exact: power-of-two scaling
  double lo = std::floor(q), rest = q - lo; // both exact
  if (rest > 0.5 || (rest == 0.5 && std::fmod(lo, 2.0) == 1.0)) lo += 1;
  double r = lo * ulp;                      // exact
  if (r > f.max_finite()) r = INFINITY;
  return std::copysign(r, d);
}

uint16_t f16_gcc_bits(double d) {
  _Float16 h = (_Float16)d;
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

double f16_gcc_value(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return double(h);
}

// Random doubles that stress a format: normals over its whole exponent range
// and beyond, subnormals, values right at and next to halfway points between
// neighbours, the overflow threshold, and arbitrary bit patterns.
struct Sampler {
  std::mt19937_64 rng;
  Format f;
  explicit Sampler(const Format& fmt, uint64_t seed) : rng(seed), f(fmt) {}

  double with_exp(int e) {
    uint64_t mant = rng() & ((uint64_t(1) << 52) - 1);
    double m = 1.0 + std::ldexp(double(mant), -52);
    double v = std::ldexp(m, e);
    return (rng() & 1) ? -v : v;
  }
  int uniform_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

  // A value of the format: random sign, exponent and kept bits.
  double format_value(int elo, int ehi) {
    int e = uniform_int(elo, ehi);
    int exp = std::max(e, f.emin);
    uint64_t frac = rng() & ((uint64_t(1) << (f.p - 1)) - 1);
    double v = e < f.emin ? std::ldexp(double(frac), f.emin - (f.p - 1))
                          : std::ldexp(double((uint64_t(1) << (f.p - 1)) | frac), exp - (f.p - 1));
    return (rng() & 1) ? -v : v;
  }

  double next() {
    switch (rng() % 8) {
      case 0: case 1: return with_exp(uniform_int(f.emin - 4, f.emax + 2));            // normals and around
      case 2: return with_exp(uniform_int(f.emin - f.p - 3, f.emin - 1));              // subnormal range
      case 3: case 4: {                                                                 // halfway points
        double v = format_value(f.emin - 1, f.emax);
        double ulp = std::ldexp(1.0, std::max(std::ilogb(v == 0 ? 1.0 : v), f.emin) - (f.p - 1));
        if (std::fabs(v) < std::ldexp(1.0, f.emin)) ulp = std::ldexp(1.0, f.emin - (f.p - 1));
        double tie = v + std::copysign(ulp / 2, v);
        switch (rng() % 3) {
          case 0: return tie;
          case 1: return std::nextafter(tie, 0.0);
          default: return std::nextafter(tie, tie * 2);
        }
      }
      case 5: {                                                                         // overflow threshold
        double mx = f.max_finite(), half_ulp = std::ldexp(1.0, f.emax - f.p);
        double pts[] = {mx, mx + half_ulp, std::nextafter(mx + half_ulp, 0.0), std::nextafter(mx + half_ulp, INFINITY),
                        mx * (1 + std::uniform_real_distribution<double>(0, 0.01)(rng)), std::ldexp(1.0, f.emax + 1)};
        double v = pts[rng() % std::size(pts)];
        return (rng() & 1) ? -v : v;
      }
      case 6: {                                                                         // arbitrary bits
        return f64_from_bits(rng());
      }
      default: {                                                                        // tiny: near 0 and half the smallest subnormal
        double tiny = std::ldexp(1.0, f.emin - (f.p - 1));
        double pts[] = {0.0, -0.0, tiny, tiny / 2, std::nextafter(tiny / 2, 0.0), std::nextafter(tiny / 2, 1.0),
                        tiny * 1.5, tiny / 4, DBL_MIN, DBL_TRUE_MIN, INFINITY, -INFINITY, NAN, -NAN};
        double v = pts[rng() % std::size(pts)];
        return (rng() & 1) ? -v : v;
      }
    }
  }
};

std::string show(double d) {
  std::ostringstream s;
  s.precision(17);
  s << d << " (0x" << std::hex << f64_bits(d) << ")";
  return s.str();
}

// Counts disagreements between encode(t, .) and the reference over n samples.
struct Disagreement {
  int64_t count = 0;
  std::string first;
};

Disagreement compare_with_reference(DType t, const Format& f, int n, uint64_t seed) {
  Sampler s(f, seed);
  Disagreement out;
  for (int i = 0; i < n; ++i) {
    double d = s.next();
    double want = reference_round(d, f);
    double got = decode(t, encode(t, d));
    bool ok = std::isnan(want) ? std::isnan(got) : (got == want && std::signbit(got) == std::signbit(want));
    if (!ok && out.count++ == 0) out.first = "d=" + show(d) + " want " + show(want) + " got " + show(got);
  }
  return out;
}

}  // namespace

TEST_CASE("the reference rounding itself agrees with the hardware float conversion", "[dtype]") {
  // Guards the reference used below: on f32 it must match (float)d exactly.
  Sampler s(kF32, 11);
  int64_t bad = 0;
  std::string first;
  for (int i = 0; i < 200000; ++i) {
    double d = s.next();
    double want = double(float(d)), got = reference_round(d, kF32);
    bool ok = std::isnan(want) ? std::isnan(got) : (got == want && std::signbit(got) == std::signbit(want));
    if (!ok && bad++ == 0) first = show(d);
  }
  INFO("first: " << first);
  CHECK(bad == 0);
  CHECK(kF16.max_finite() == 65504.0);
  CHECK(kBF16.max_finite() == max_finite(DType::bf16));
  CHECK(kF32.max_finite() == double(FLT_MAX));
}

TEST_CASE("f16 encode matches GCC's _Float16 conversion from double", "[dtype]") {
  Sampler s(kF16, 1234);
  int64_t bad = 0, nans = 0, ties = 0, subnormals = 0, infs = 0;
  std::string first;
  for (int i = 0; i < 200000; ++i) {
    double d = s.next();
    uint16_t want = f16_gcc_bits(d);
    uint16_t got = uint16_t(encode(DType::f16, d));
    bool want_nan = (want & 0x7c00) == 0x7c00 && (want & 0x3ff);
    bool got_nan = (got & 0x7c00) == 0x7c00 && (got & 0x3ff);
    nans += want_nan;
    infs += (want & 0x7fff) == 0x7c00;
    subnormals += (want & 0x7c00) == 0 && (want & 0x3ff);
    // a halfway point: exactly between two f16 neighbours
    if (!want_nan && std::isfinite(d) && d != 0) {
      double a = f16_gcc_value(want), b = f16_gcc_value(uint16_t(want ^ 1));
      ties += std::fabs(d - a) == std::fabs(d - b) && a != b;
    }
    bool ok = want_nan ? got_nan : want == got;
    if (!ok && bad++ == 0) first = "d=" + show(d) + " gcc " + std::to_string(want) + " assay " + std::to_string(got);
  }
  INFO("first disagreement: " << first);
  CHECK(bad == 0);
  // The sample really covers the hard classes.
  CHECK(nans > 100);
  CHECK(infs > 1000);
  CHECK(subnormals > 5000);
  CHECK(ties > 1000);
}

TEST_CASE("f16 and the reference rounding agree, and some f16 landmarks", "[dtype]") {
  auto d = compare_with_reference(DType::f16, kF16, 100000, 99);
  INFO(d.first);
  CHECK(d.count == 0);
  CHECK(encode(DType::f16, 65504.0) == 0x7bff);
  CHECK(encode(DType::f16, 65519.99) == 0x7bff);
  CHECK(encode(DType::f16, 65520.0) == 0x7c00);  // tie, 65504 is odd: up to Inf
  CHECK(encode(DType::f16, -1e300) == 0xfc00);
  CHECK(encode(DType::f16, std::ldexp(1.0, -24)) == 0x0001);
  CHECK(encode(DType::f16, std::ldexp(1.0, -25)) == 0x0000);  // tie to even: 0
  CHECK(encode(DType::f16, std::nextafter(std::ldexp(1.0, -25), 1.0)) == 0x0001);
  CHECK(encode(DType::f16, -std::ldexp(1.0, -26)) == 0x8000);
  CHECK(encode(DType::f16, std::ldexp(1023.5, -24)) == 0x0400);  // rounds up into the smallest normal
  CHECK(encode(DType::f16, 1.0 + std::ldexp(1.0, -11)) == 0x3c00);  // tie to even
  CHECK(encode(DType::f16, 1.0 + 3 * std::ldexp(1.0, -11)) == 0x3c02);
  CHECK(encode(DType::f16, -65520.0) == 0xfc00);
}

TEST_CASE("bf16 encode is one nearest-even rounding from double", "[dtype]") {
  auto d = compare_with_reference(DType::bf16, kBF16, 200000, 7);
  INFO(d.first);
  CHECK(d.count == 0);
  // The double-rounding trap: just above a halfway point, float(d) is the
  // halfway point itself and a second rounding to even would go down.
  double tie = 1.0 + std::ldexp(1.0, -8);  // between 1 and 1 + 2^-7
  CHECK(encode(DType::bf16, tie) == 0x3f80);
  CHECK(encode(DType::bf16, std::nextafter(tie, 2.0)) == 0x3f81);
  CHECK(encode(DType::bf16, std::nextafter(tie, 0.0)) == 0x3f80);
  CHECK(encode(DType::bf16, -std::nextafter(tie, 2.0)) == 0xbf81);
  CHECK(encode(DType::bf16, 1e300) == 0x7f80);
  CHECK(encode(DType::bf16, -1e-300) == 0x8000);
  CHECK(encode(DType::bf16, std::ldexp(1.0, -133)) == 0x0001);
  CHECK(encode(DType::bf16, std::ldexp(1.0, -134)) == 0x0000);
  CHECK(encode(DType::bf16, std::nextafter(std::ldexp(1.0, -134), 1.0)) == 0x0001);
}

TEST_CASE("f32 encode is (float)d and f64 encode keeps the bits", "[dtype]") {
  auto d = compare_with_reference(DType::f32, kF32, 100000, 5);
  INFO(d.first);
  CHECK(d.count == 0);
  std::mt19937_64 rng(3);
  int64_t bad32 = 0, bad64 = 0;
  for (int i = 0; i < 100000; ++i) {
    double x = f64_from_bits(rng());
    if (encode(DType::f32, x) != f32_bits(float(x))) ++bad32;
    if (encode(DType::f64, x) != f64_bits(x)) ++bad64;
  }
  CHECK(bad32 == 0);
  CHECK(bad64 == 0);
}

TEST_CASE("decode(encode(x)) is the identity on every f16 and bf16 pattern", "[dtype]") {
  for (DType t : {DType::f16, DType::bf16}) {
    INFO(name(t));
    int64_t bad = 0, nans = 0, bad_decode = 0;
    uint32_t first = 0;
    for (uint32_t b = 0; b < 65536; ++b) {
      double x = decode(t, b);
      // decode agrees with an independent reading of the bits
      double want = t == DType::f16 ? f16_gcc_value(uint16_t(b)) : double(f32_from_bits(b << 16));
      if (!(std::isnan(want) ? std::isnan(x) : (x == want && std::signbit(x) == std::signbit(want)))) ++bad_decode;
      uint64_t back = encode(t, x);
      bool ok;
      if (std::isnan(x)) {
        ++nans;
        ok = std::isnan(decode(t, back));
      } else {
        ok = back == b;
      }
      if (!ok && bad++ == 0) first = b;
    }
    INFO("first bad pattern " << first);
    CHECK(bad == 0);
    CHECK(bad_decode == 0);
    CHECK(nans == (t == DType::f16 ? 2 * 1023 : 2 * 127));
  }
}

TEST_CASE("round_to is idempotent and monotone", "[dtype]") {
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16}) {
    INFO(name(t));
    std::mt19937_64 rng(17);
    Sampler s(t == DType::f16 ? kF16 : kBF16, 23);
    int64_t bad = 0, non_monotone = 0;
    double prev_x = 0, prev_r = 0;
    for (int i = 0; i < 50000; ++i) {
      double x = s.next();
      double r = round_to(t, x);
      double rr = round_to(t, r);
      if (!(std::isnan(r) ? std::isnan(rr) : f64_bits(r) == f64_bits(rr))) ++bad;
      if (!std::isnan(x) && !std::isnan(prev_x)) {
        if ((x < prev_x && r > prev_r) || (x > prev_x && r < prev_r)) ++non_monotone;
      }
      prev_x = x, prev_r = r;
    }
    CHECK(bad == 0);
    CHECK(non_monotone == 0);
  }
}

// Converting into a compute type (docs/tolerance.md, "Narrow compute"): one
// nearest-even rounding with that type's range, checked against independent
// encodings: the storage encoders for f16, bf16 and f32, and the bit-level
// TF32 rounding of an f32 (add half of the 13 dropped bits, ties to even).
TEST_CASE("round_compute rounds once into each compute type's grid and range", "[dtype]") {
  auto tf32_bits = [](float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7f800000u) == 0x7f800000u) return x;
    u += 0xfffu + ((u >> 13) & 1u);
    return f32_from_bits(u & 0xffffe000u);
  };
  uint64_t h = 0x1234;
  for (int i = 0; i < 200000; ++i) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    const float x = f32_from_bits(uint32_t(h >> 32));  // every class, subnormals and Inf/NaN included
    INFO(x);
    if (x != x) {
      CHECK(std::isnan(round_compute(Compute::tf32, x)));
      continue;
    }
    CHECK(f64_bits(round_compute(Compute::tf32, x)) == f64_bits(double(tf32_bits(x))));
    CHECK(f64_bits(round_compute(Compute::f16, x)) == f64_bits(round_to(DType::f16, x)));
    CHECK(f64_bits(round_compute(Compute::bf16, x)) == f64_bits(round_to(DType::bf16, x)));
    CHECK(f64_bits(round_compute(Compute::f32, x)) == f64_bits(double(x)));
    CHECK(f64_bits(round_compute(Compute::f64, x)) == f64_bits(double(x)));
  }
  // The cases that made correct narrow kernels fail (issue #13): an f32
  // subnormal below TF32's grid rounds to 0; near FLT_MAX it overflows.
  CHECK(round_compute(Compute::tf32, 11 * std::ldexp(1.0, -149)) == 0);
  CHECK(round_compute(Compute::tf32, std::ldexp(1.0, -136)) == std::ldexp(1.0, -136));
  CHECK(std::isinf(round_compute(Compute::tf32, -3.4028234663852886e38)));
  CHECK(round_compute(Compute::tf32, -3.4028234663852886e38) < 0);
  CHECK(round_compute(Compute::f16, 65519.0) == 65504.0);
  CHECK(std::isinf(round_compute(Compute::f16, 65520.0)));
  CHECK(round_compute(Compute::f16, std::ldexp(1.0, -25)) == 0);  // the tie rounds to even: 0
  CHECK(round_compute(Compute::f16, std::ldexp(1.0, -24)) == std::ldexp(1.0, -24));
  CHECK(std::isinf(round_compute(Compute::bf16, 3.4028234663852886e38)));
}

TEST_CASE("integer dtypes: names, sizes, exact round trips, saturation", "[dtype]") {
  CHECK(parse_dtype("i64") == DType::i64);
  CHECK(parse_dtype("i32") == DType::i32);
  CHECK(name(DType::i64) == "i64");
  CHECK(dtype_bytes(DType::i64) == 8);
  CHECK(dtype_bytes(DType::i32) == 4);
  CHECK(is_integer(DType::i64));
  CHECK_FALSE(is_integer(DType::f64));
  for (double v : {0.0, 1.0, -1.0, 4097.0, -70001.0, 9007199254740992.0}) {
    CHECK(decode(DType::i64, encode(DType::i64, v)) == v);
    if (std::fabs(v) < 2147483648.0) CHECK(decode(DType::i32, encode(DType::i32, v)) == v);
  }
  CHECK(encode(DType::i64, -1.0) == 0xffffffffffffffffull);    // two's complement
  CHECK(encode(DType::i32, -1.0) == 0xffffffffull);            // low bytes only
  CHECK(round_to(DType::i64, 2.5) == 2.0);                     // ties to even
  CHECK(round_to(DType::i64, 3.5) == 4.0);
  CHECK(round_to(DType::i64, NAN) == 0.0);                     // no NaN in integers
  CHECK(round_to(DType::i32, 1e300) == 2147483647.0);          // saturated
  CHECK(round_to(DType::i32, -INFINITY) == -2147483648.0);
  CHECK(int64_t(encode(DType::i64, 1e300)) == INT64_MAX);
  // Stored and loaded through the generic byte helpers.
  unsigned char buf[8];
  store_bits(DType::i64, buf, encode(DType::i64, -5.0));
  CHECK(decode(DType::i64, load_bits(DType::i64, buf)) == -5.0);
}

// The FP8 codes a kernel compares against, under Debian's DLPack 0.6 too.
static_assert(ASSAY_DL_FLOAT8_E4M3FN == 10 && ASSAY_DL_FLOAT8_E5M2 == 12);
static_assert(kDLFloat8_e4m3fn == 10 && kDLFloat8_e5m2 == 12);

TEST_CASE("FP8 dtypes: every pattern round-trips, landmarks, rounding and overflow", "[dtype]") {
  CHECK(parse_dtype("e4m3") == DType::e4m3);
  CHECK(parse_dtype("e5m2") == DType::e5m2);
  CHECK(name(DType::e5m2) == "e5m2");
  CHECK(dtype_bytes(DType::e4m3) == 1);
  CHECK(is_fp8(DType::e5m2));
  CHECK_FALSE(is_fp8(DType::bf16));
  for (DType t : {DType::e4m3, DType::e5m2})
    for (unsigned x = 0; x < 256; ++x) {
      const double v = decode(t, x);
      INFO(name(t) << " pattern " << x << " = " << v);
      if (std::isnan(v)) {
        CHECK(std::isnan(decode(t, encode(t, v))));
      } else {
        CHECK(encode(t, v) == x);  // each finite value and +-inf has one pattern, -0 included
        CHECK(std::fabs(v) <= max_finite(t) + (std::isinf(v) ? INFINITY : 0.0));
      }
    }
  // e4m3fn (bias 7, 3 mantissa bits): no infinity; 0x7f is its NaN.
  CHECK(decode(DType::e4m3, 0x7e) == 448.0);
  CHECK(decode(DType::e4m3, 0x38) == 1.0);
  CHECK(decode(DType::e4m3, 0x01) == std::ldexp(1.0, -9));  // smallest subnormal
  CHECK(decode(DType::e4m3, 0x08) == std::ldexp(1.0, -6));  // smallest normal
  CHECK(std::isnan(decode(DType::e4m3, 0x7f)));
  CHECK(std::isnan(decode(DType::e4m3, 0xff)));
  CHECK(decode(DType::e4m3, 0x78) == 256.0);  // the top exponent is finite
  CHECK(encode(DType::e4m3, 460.0) == 0x7e);  // rounds to 448
  CHECK(encode(DType::e4m3, 464.0) == 0x7e);  // the tie rounds to even (448)
  CHECK(encode(DType::e4m3, 465.0) == 0x7f);  // past it: NaN (no Inf to overflow into)
  CHECK(encode(DType::e4m3, INFINITY) == 0x7f);
  CHECK(encode(DType::e4m3, -INFINITY) == 0xff);
  CHECK(encode(DType::e4m3, 1.0625) == 0x38);  // tie between 1 and 1.125: even
  CHECK(encode(DType::e4m3, 1.0626) == 0x39);
  CHECK(encode(DType::e4m3, std::ldexp(1.0, -10)) == 0x00);          // half the smallest subnormal: to even (0)
  CHECK(encode(DType::e4m3, std::ldexp(1.5, -10)) == 0x01);
  CHECK(encode(DType::e4m3, std::ldexp(1.9375, -7)) == 0x08);        // a subnormal that rounds up to the smallest normal
  CHECK(encode(DType::e4m3, -0.0) == 0x80);
  // e5m2 (bias 15, 2 mantissa bits): IEEE-style infinities and NaNs.
  CHECK(decode(DType::e5m2, 0x7b) == 57344.0);
  CHECK(decode(DType::e5m2, 0x3c) == 1.0);
  CHECK(decode(DType::e5m2, 0x01) == std::ldexp(1.0, -16));
  CHECK(std::isinf(decode(DType::e5m2, 0x7c)));
  CHECK(std::isnan(decode(DType::e5m2, 0x7d)));
  CHECK(encode(DType::e5m2, 61439.0) == 0x7b);
  CHECK(encode(DType::e5m2, 61440.0) == 0x7c);  // the tie rounds to even: past the largest, Inf
  CHECK(encode(DType::e5m2, -1e9) == 0xfc);
  // Stored and loaded as one byte.
  unsigned char buf[2] = {0xaa, 0xaa};
  store_bits(DType::e4m3, buf, encode(DType::e4m3, -2.0));
  CHECK(buf[1] == 0xaa);
  CHECK(decode(DType::e4m3, load_bits(DType::e4m3, buf)) == -2.0);
}
