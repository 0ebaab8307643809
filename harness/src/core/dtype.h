// Element types of tensors and of the claimed compute precision, with exact
// bit-level conversions usable on host and device (no intrinsics, so the
// rounding is identical on both).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "core/hd.h"

namespace assay {

// i64 and i32 are two's-complement integers (indices: arg-reductions,
// routing); they never hold NaN or Inf, and compare exactly.
// e4m3 and e5m2 are the FP8 storage types (fp8_gemm's inputs): e4m3 is OCP's
// e4m3fn (no infinity, NaN 0x7f/0xff, largest finite 448), e5m2 is
// IEEE-style (infinities, NaNs, largest finite 57344).
enum class DType : uint8_t { f64, f32, f16, bf16, i64, i32, e4m3, e5m2 };
// tf32 exists only as a compute precision, never as a storage type.
enum class Compute : uint8_t { f64, f32, tf32, f16, bf16 };

std::string_view name(DType t);
std::string_view name(Compute c);
std::optional<DType> parse_dtype(std::string_view s);
std::optional<Compute> parse_compute(std::string_view s);

ASSAY_HD bool is_integer(DType t) { return t == DType::i64 || t == DType::i32; }
ASSAY_HD constexpr bool is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }
ASSAY_HD constexpr int dtype_bytes(DType t) {
  return t == DType::f64 || t == DType::i64 ? 8 : t == DType::f32 || t == DType::i32 ? 4 : is_fp8(t) ? 1 : 2;
}
// Significand bits including the implicit one (p in u = 2^-p). Integers:
// the bits a double holds of them exactly (value bits, at most 53).
ASSAY_HD int mantissa_bits(DType t) {
  return t == DType::f64 || t == DType::i64 ? 53 : t == DType::f32 ? 24 : t == DType::i32 ? 31
       : t == DType::f16 ? 11 : t == DType::e4m3 ? 4 : t == DType::e5m2 ? 3 : 8;
}
ASSAY_HD int mantissa_bits(Compute c) {
  switch (c) {
    case Compute::f64: return 53;
    case Compute::f32: return 24;
    case Compute::tf32: return 11;
    case Compute::f16: return 11;
    default: return 8;
  }
}
// Smallest normal exponent (x >= 2^emin is normal).
// (Integers: 0, so the spacing of ulp-style formulas is 1 at small values.)
ASSAY_HD int min_normal_exp(DType t) {
  return is_integer(t) ? 0 : t == DType::f64 ? -1022 : t == DType::f16 || t == DType::e5m2 ? -14
       : t == DType::e4m3 ? -6 : -126;
}
ASSAY_HD double max_finite(DType t) {
  return t == DType::f64 ? 1.7976931348623157e308
       : t == DType::f32 ? 3.4028234663852886e38
       : t == DType::f16 ? 65504.0
       : t == DType::i64 ? 9223372036854775807.0
       : t == DType::i32 ? 2147483647.0 : t == DType::e4m3 ? 448.0 : t == DType::e5m2 ? 57344.0
       : 3.3895313892515355e38;
}

ASSAY_HD uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
ASSAY_HD float f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
ASSAY_HD uint64_t f64_bits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
ASSAY_HD double f64_from_bits(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

// float -> bf16, round to nearest even; NaN stays a quiet NaN.
ASSAY_HD uint16_t bf16_from_f32(float f) {
  uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
ASSAY_HD float f32_from_bf16(uint16_t h) { return f32_from_bits(uint32_t(h) << 16); }

// double -> f16, one correct rounding (to nearest even) straight from double.
ASSAY_HD uint16_t f16_from_f64(double d) {
  uint64_t u = f64_bits(d);
  uint16_t sign = uint16_t((u >> 48) & 0x8000u);
  uint64_t mag = u & 0x7fffffffffffffffull;
  if (mag > 0x7ff0000000000000ull) return uint16_t(sign | 0x7e00u);  // NaN
  if (mag >= 0x40effe0000000000ull) return uint16_t(sign | 0x7c00u); // >= 65520 rounds to Inf
  int exp = int(mag >> 52) - 1023;
  uint64_t sig = (mag & 0xfffffffffffffull) | (1ull << 52);
  if (mag == 0) return sign;
  // f16 keeps 10 fraction bits for normals; subnormals have fixed exponent -14.
  int shift = exp >= -14 ? 42 : 42 + (-14 - exp);
  if (shift > 53 + 1) return sign;  // far below half the smallest subnormal
  uint64_t kept = sig >> shift;
  uint64_t rem = sig & ((1ull << shift) - 1);
  uint64_t half = 1ull << (shift - 1);
  if (rem > half || (rem == half && (kept & 1))) ++kept;
  // kept now is the significand at the f16 scale; rebuild the exponent field.
  if (exp >= -14) {
    uint32_t e = uint32_t(exp + 15);
    uint32_t bits = (e << 10) + uint32_t(kept - (1ull << 10));  // carry bumps e
    return uint16_t(sign | bits);
  }
  return uint16_t(sign | uint32_t(kept));  // subnormal (may round up to min normal)
}
ASSAY_HD double f64_from_f16(uint16_t h) {
  uint32_t sign = h & 0x8000u, e = (h >> 10) & 0x1fu, f = h & 0x3ffu;
  double v;
  if (e == 0) v = double(f) * (1.0 / 16777216.0);  // f * 2^-24
  else if (e == 31) v = f ? f64_from_bits(0x7ff8000000000000ull) : f64_from_bits(0x7ff0000000000000ull);
  else v = double(f | 0x400u) * double(1u << e) * (1.0 / 33554432.0);  // 2^(e-15-10)
  return sign ? -v : v;
}

// double -> FP8 (e4m3fn or e5m2), one rounding to nearest even straight
// from double. Past the largest finite value after rounding: e5m2 gives
// +-Inf (IEEE), e4m3fn, which has no infinity, gives NaN (what a
// non-saturating conversion such as torch's .to(float8_e4m3fn) does).
ASSAY_HD uint8_t fp8_from_f64(DType t, double d) {
  const bool e4m3 = t == DType::e4m3;
  const int mant = e4m3 ? 3 : 2, emin = e4m3 ? -6 : -14;
  const double maxv = e4m3 ? 448.0 : 57344.0;
  const uint8_t sign = (f64_bits(d) >> 63) ? 0x80 : 0x00;
  const uint8_t nan = e4m3 ? 0x7f : 0x7e, inf = 0x7c;
  if (d != d) return uint8_t(sign | nan);
  const double mag = fabs(d);
  if (mag == 0) return sign;
  int e = 0;
  frexp(mag, &e);  // mag in [2^(e-1), 2^e)
  const int exp = (e - 1) > emin ? e - 1 : emin;
  const double q = ldexp(1.0, exp - mant);  // the spacing at mag
  const double r = rint(mag / q) * q;       // ties to even
  if (!(r <= maxv)) return uint8_t(sign | (e4m3 ? nan : inf));
  if (r < ldexp(1.0, emin)) return uint8_t(sign | uint8_t(r / ldexp(1.0, emin - mant)));  // subnormal (or 0)
  frexp(r, &e);  // rounding may have carried into the next binade
  const int field = (e - 1) - emin + 1;
  const uint8_t m = uint8_t(r / ldexp(1.0, (e - 1) - mant) - double(1 << mant));
  return uint8_t(sign | (field << mant) | m);
}
ASSAY_HD double f64_from_fp8(DType t, uint8_t x) {
  const bool e4m3 = t == DType::e4m3;
  const int mant = e4m3 ? 3 : 2, emin = e4m3 ? -6 : -14;
  const int field = (x & 0x7f) >> mant, m = x & ((1 << mant) - 1);
  const double nan = f64_from_bits(0x7ff8000000000000ull), inf = f64_from_bits(0x7ff0000000000000ull);
  double v;
  if (e4m3 && (x & 0x7f) == 0x7f) v = nan;
  else if (!e4m3 && field == 31) v = m ? nan : inf;
  else if (field == 0) v = ldexp(double(m), emin - mant);
  else v = ldexp(double((1 << mant) | m), field - 1 + emin - mant);
  return (x & 0x80) ? -v : v;
}

// double -> a two's-complement integer of `bits` bits: rounded to nearest
// (ties to even), saturated at the type's range; NaN becomes 0.
ASSAY_HD uint64_t int_from_f64(double d, int bits) {
  const double hi = bits == 64 ? 9223372036854775808.0 : 2147483648.0;  // 2^(bits-1)
  int64_t v;
  if (d != d) v = 0;
  else if (d >= hi) v = bits == 64 ? INT64_MAX : INT32_MAX;
  else if (d < -hi) v = bits == 64 ? INT64_MIN : INT32_MIN;
  else v = int64_t(rint(d));
  return bits == 64 ? uint64_t(v) : uint64_t(uint32_t(int32_t(v)));
}

// Round a double to the storage type and return the stored bits (low bytes).
ASSAY_HD uint64_t encode(DType t, double d) {
  switch (t) {
    case DType::f64: return f64_bits(d);
    case DType::i64: return int_from_f64(d, 64);
    case DType::i32: return int_from_f64(d, 32);
    case DType::f32: return f32_bits(float(d));
    case DType::f16: return f16_from_f64(d);
    case DType::e4m3:
    case DType::e5m2: return fp8_from_f64(t, d);
    default: {
      // double -> float -> bf16 would round twice; go through a float that
      // is truncated toward zero with a sticky bit so the second rounding is exact.
      float f = float(d);
      if (double(f) != d && d == d) {
        uint32_t b = f32_bits(f);
        if ((double(f) > d) == (d > 0)) b -= 1;  // f was rounded away from zero: step back
        b |= 1u;                                 // sticky: remember the lost bits
        f = f32_from_bits(b);
      }
      return bf16_from_f32(f);
    }
  }
}
ASSAY_HD double decode(DType t, uint64_t bits) {
  switch (t) {
    case DType::f64: return f64_from_bits(bits);
    case DType::f32: return double(f32_from_bits(uint32_t(bits)));
    case DType::f16: return f64_from_f16(uint16_t(bits));
    case DType::i64: return double(int64_t(bits));  // exact below 2^53 (indices)
    case DType::i32: return double(int32_t(uint32_t(bits)));
    case DType::e4m3:
    case DType::e5m2: return f64_from_fp8(t, uint8_t(bits));
    default: return double(f32_from_bf16(uint16_t(bits)));
  }
}
ASSAY_HD double round_to(DType t, double d) { return decode(t, encode(t, d)); }

// Round a double to the grid of a compute precision, to nearest even, with
// that precision's exponent range: subnormals below its smallest normal and
// +-Inf past its largest finite value (what converting an input into the
// compute type does). f64 is the identity. tf32 is f32's range with 11 bits.
struct ComputeFormat {
  int bits;          // significand bits, the implicit one included
  int emin;          // smallest normal exponent
  double max;        // largest finite value
};
ASSAY_HD ComputeFormat format_of(Compute c) {
  switch (c) {
    case Compute::f64: return {53, -1022, 1.7976931348623157e308};
    case Compute::f32: return {24, -126, 3.4028234663852886e38};
    case Compute::tf32: return {11, -126, 3.4011621342146535e38};  // (2 - 2^-10) 2^127
    case Compute::f16: return {11, -14, 65504.0};
    default: return {8, -126, 3.3895313892515355e38};              // bf16: (2 - 2^-7) 2^127
  }
}
// Spacing of the format's subnormals: its smallest positive value.
ASSAY_HD double min_subnormal(ComputeFormat f) { return ldexp(1.0, f.emin - (f.bits - 1)); }
ASSAY_HD double round_compute(Compute c, double x) {
  if (c == Compute::f64 || !(fabs(x) <= 1.7976931348623157e308)) return x;  // f64, NaN, Inf
  if (x == 0) return x;
  const ComputeFormat f = format_of(c);
  int e = 0;
  frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  const int exp = (e - 1) > f.emin ? e - 1 : f.emin;
  const double q = ldexp(1.0, exp - (f.bits - 1));  // the spacing at |x|: x / q is exact
  const double r = rint(x / q) * q;                 // ties to even (the default rounding mode)
  if (fabs(r) > f.max) return x > 0 ? f64_from_bits(0x7ff0000000000000ull) : -f64_from_bits(0x7ff0000000000000ull);
  return r;
}

// On the device a memcpy of unknown alignment is a load or store per byte
// (a fill, copy or comparison then ran at a fraction of the memory's rate):
// an aligned element takes one typed access, any other the bytes.
ASSAY_HD uint64_t load_bits(DType t, const void* p) {
#if defined(__CUDA_ARCH__)
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  switch (dtype_bytes(t)) {
    case 8: if (at % 8 == 0) return *static_cast<const uint64_t*>(p); break;
    case 4: if (at % 4 == 0) return *static_cast<const uint32_t*>(p); break;
    case 1: return *static_cast<const uint8_t*>(p);
    default: if (at % 2 == 0) return *static_cast<const uint16_t*>(p); break;
  }
#endif
  switch (dtype_bytes(t)) {
    case 8: { uint64_t v; memcpy(&v, p, 8); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    case 1: { uint8_t v; memcpy(&v, p, 1); return v; }
    default: { uint16_t v; memcpy(&v, p, 2); return v; }
  }
}
ASSAY_HD void store_bits(DType t, void* p, uint64_t bits) {
#if defined(__CUDA_ARCH__)
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  switch (dtype_bytes(t)) {
    case 8: if (at % 8 == 0) { *static_cast<uint64_t*>(p) = bits; return; } break;
    case 4: if (at % 4 == 0) { *static_cast<uint32_t*>(p) = uint32_t(bits); return; } break;
    case 1: *static_cast<uint8_t*>(p) = uint8_t(bits); return;
    default: if (at % 2 == 0) { *static_cast<uint16_t*>(p) = uint16_t(bits); return; } break;
  }
#endif
  switch (dtype_bytes(t)) {
    case 8: memcpy(p, &bits, 8); break;
    case 4: { uint32_t v = uint32_t(bits); memcpy(p, &v, 4); break; }
    case 1: { uint8_t v = uint8_t(bits); memcpy(p, &v, 1); break; }
    default: { uint16_t v = uint16_t(bits); memcpy(p, &v, 2); break; }
  }
}

}  // namespace assay
