/* assay reference arithmetic: the number type `assay_real` that the reference
 * of an `op: custom` spec computes in. Self-contained C++17; includes no other
 * assay header.
 *
 * The harness compiles a custom op's reference (a host C++ file exporting
 * `extern "C" int assay_run(const assay_call*)`, fed FP64 tensors) twice:
 *
 *   ASSAY_REFERENCE_DTYPE  assay_real is          used as
 *   undefined or 0         double                 the FP64 reference
 *   1                      float                  the "same precision" reference
 *   2                      assay_reference::binary16  (emulated IEEE binary16)
 *   3                      assay_reference::bfloat16  (emulated bfloat16)
 *
 * (the second build uses the candidate's dtype; `vs_same_precision: k` lets the
 * candidate's error against FP64 be at most k times that build's error, plus
 * `absolute`).
 *
 * How to write a reference so that every mode means what it says:
 *
 *   #include <assay/abi.h>
 *   #include <assay/reference.h>
 *   #include <cmath>
 *
 *   double x = ...;                      // an element of an FP64 input tensor
 *   using std::erf; using std::sqrt;     // double and float find std::
 *                                        // the emulated types find their own
 *                                        // overloads by argument-dependent lookup
 *   const assay_real half(0.5), one(1);  // constants: spell them as assay_real
 *   assay_real v(x);                     // load: rounds once to the type
 *   assay_real y = half * v * (one + erf(v / sqrt(assay_real(2))));
 *   *out = double(y);                    // store: exact widening
 *
 * - Call the math functions unqualified after `using std::name;`. Writing
 *   `std::erf(v)` does not compile for the emulated types, and would not be
 *   the same function anyway.
 * - Write constants as `assay_real(c)`. A bare `0.5` works for the emulated
 *   types (it converts, rounded to the format) but makes `float * double`
 *   a double operation in mode 1, so that build would no longer compute in
 *   float.
 * - Conversions out are explicit: `double(y)`, `float(y)`.
 *
 * The emulated types hold their value in a float. Every constructor and every
 * arithmetic result (+ - * / and unary -, the compound assignments, and the
 * math functions below) is rounded once to the format's grid: round to
 * nearest, ties to even, subnormals kept, overflow to +-Inf, NaN kept (quiet).
 * + - * / are computed in double first (exact for binary16 +, -, *; for the
 * rest double has more than 2p + 2 bits, so the double rounding is innocuous);
 * the math functions call the double std:: function and round its result.
 * Comparisons compare the values as IEEE numbers (NaN unordered).
 * Math functions: exp, log, sqrt, tanh, erf, fabs, abs, fma, fmax, fmin, pow,
 * expm1, log1p; isnan, isinf, isfinite.
 */
#ifndef ASSAY_REFERENCE_H
#define ASSAY_REFERENCE_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#ifndef ASSAY_REFERENCE_DTYPE
#define ASSAY_REFERENCE_DTYPE 0
#endif

namespace assay_reference {

/* Rounds x to the nearest value of a binary floating-point format with P
 * significand bits (the implicit bit included) and normal exponents
 * [EMIN, EMAX], ties to even; subnormals kept, values at or beyond
 * max + half an ulp go to +-Inf, +-0, +-Inf and NaN are returned as they are.
 * The result is exactly representable in double (and in float for P <= 24,
 * EMIN >= -126, EMAX <= 127). Integer arithmetic on the bits of x. */
template <int P, int EMIN, int EMAX>
inline double round_to_format(double x) {
  static_assert(P >= 2 && P <= 52 && EMIN < 0 && EMAX > 0 && EMIN >= -1021 && EMAX <= 1023, "format");
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const uint64_t sign = bits & 0x8000000000000000ull;
  const uint64_t mag = bits & ~0x8000000000000000ull;
  if (mag == 0 || mag >= 0x7ff0000000000000ull) return x;  // +-0, +-Inf, NaN
  int biased = int(mag >> 52);
  uint64_t m = mag & ((uint64_t(1) << 52) - 1);
  if (biased == 0)
    biased = 1;  // a double subnormal: m * 2^-1074, far below any target's subnormals
  else
    m |= uint64_t(1) << 52;
  // |x| = m * 2^(biased - 1075), its leading bit at 2^(biased - 1023) (normals).
  const int lead = biased - 1023;
  const int quantum = (lead > EMIN ? lead : EMIN) - (P - 1);  // the target's ulp at |x|: 2^quantum
  const int shift = quantum - (biased - 1075);                // bits of m below the quantum; >= 53 - P > 0
  uint64_t r;
  if (shift >= 64) {
    r = 0;  // |x| < 2^53 * 2^(quantum - 64): far below half the smallest subnormal
  } else {
    r = m >> shift;
    const uint64_t rest = m & ((uint64_t(1) << shift) - 1), half = uint64_t(1) << (shift - 1);
    if (rest > half || (rest == half && (r & 1))) ++r;  // to nearest, ties to even
  }
  // r * 2^quantum, exact in double (r <= 2^P); a carry out of the significand is
  // handled by the value itself (r == 2^P is the next binade's first value).
  double y = std::ldexp(double(r), quantum);
  const double max_finite = std::ldexp(double((uint64_t(1) << P) - 1), EMAX - (P - 1));
  if (y > max_finite) y = std::numeric_limits<double>::infinity();
  return sign ? -y : y;
}

/* A P-bit binary floating-point number emulated in a float: see the comment at
 * the top of this header. */
template <int P, int EMIN, int EMAX>
class emulated_float {
  static_assert(P <= 24 && EMIN >= -126 && EMAX <= 127, "the value must fit in a float");

 public:
  emulated_float() = default;  // +0
  template <class T, typename std::enable_if<std::is_arithmetic<T>::value, int>::type = 0>
  emulated_float(T x) : v_(float(round_to_format<P, EMIN, EMAX>(double(x)))) {}  // NOLINT: implicit on purpose

  explicit operator double() const { return v_; }
  explicit operator float() const { return v_; }

  // Arithmetic: the exact (or double) result, rounded once to the format.
  friend emulated_float operator+(emulated_float a, emulated_float b) { return emulated_float(double(a.v_) + double(b.v_)); }
  friend emulated_float operator-(emulated_float a, emulated_float b) { return emulated_float(double(a.v_) - double(b.v_)); }
  friend emulated_float operator*(emulated_float a, emulated_float b) { return emulated_float(double(a.v_) * double(b.v_)); }
  friend emulated_float operator/(emulated_float a, emulated_float b) { return emulated_float(double(a.v_) / double(b.v_)); }
  friend emulated_float operator-(emulated_float a) { return emulated_float(-double(a.v_)); }
  friend emulated_float operator+(emulated_float a) { return a; }
  emulated_float& operator+=(emulated_float b) { return *this = *this + b; }
  emulated_float& operator-=(emulated_float b) { return *this = *this - b; }
  emulated_float& operator*=(emulated_float b) { return *this = *this * b; }
  emulated_float& operator/=(emulated_float b) { return *this = *this / b; }

  friend bool operator==(emulated_float a, emulated_float b) { return a.v_ == b.v_; }
  friend bool operator!=(emulated_float a, emulated_float b) { return a.v_ != b.v_; }
  friend bool operator<(emulated_float a, emulated_float b) { return a.v_ < b.v_; }
  friend bool operator<=(emulated_float a, emulated_float b) { return a.v_ <= b.v_; }
  friend bool operator>(emulated_float a, emulated_float b) { return a.v_ > b.v_; }
  friend bool operator>=(emulated_float a, emulated_float b) { return a.v_ >= b.v_; }

  // Math functions, found by argument-dependent lookup: the double std::
  // function of the (exact) double value, rounded once to the format.
  friend emulated_float exp(emulated_float a) { return emulated_float(std::exp(double(a.v_))); }
  friend emulated_float log(emulated_float a) { return emulated_float(std::log(double(a.v_))); }
  friend emulated_float sqrt(emulated_float a) { return emulated_float(std::sqrt(double(a.v_))); }
  friend emulated_float tanh(emulated_float a) { return emulated_float(std::tanh(double(a.v_))); }
  friend emulated_float erf(emulated_float a) { return emulated_float(std::erf(double(a.v_))); }
  friend emulated_float expm1(emulated_float a) { return emulated_float(std::expm1(double(a.v_))); }
  friend emulated_float log1p(emulated_float a) { return emulated_float(std::log1p(double(a.v_))); }
  friend emulated_float fabs(emulated_float a) { return emulated_float(std::fabs(double(a.v_))); }
  friend emulated_float abs(emulated_float a) { return emulated_float(std::fabs(double(a.v_))); }
  friend emulated_float fma(emulated_float a, emulated_float b, emulated_float c) {
    return emulated_float(std::fma(double(a.v_), double(b.v_), double(c.v_)));
  }
  friend emulated_float fmax(emulated_float a, emulated_float b) { return emulated_float(std::fmax(double(a.v_), double(b.v_))); }
  friend emulated_float fmin(emulated_float a, emulated_float b) { return emulated_float(std::fmin(double(a.v_), double(b.v_))); }
  friend emulated_float pow(emulated_float a, emulated_float b) { return emulated_float(std::pow(double(a.v_), double(b.v_))); }
  friend bool isnan(emulated_float a) { return std::isnan(a.v_); }
  friend bool isinf(emulated_float a) { return std::isinf(a.v_); }
  friend bool isfinite(emulated_float a) { return std::isfinite(a.v_); }

 private:
  float v_ = 0.0f;
};

typedef emulated_float<11, -14, 15> binary16;    // IEEE 754 binary16: max 65504, smallest subnormal 2^-24
typedef emulated_float<8, -126, 127> bfloat16;   // bfloat16: float's exponent range, 8 significand bits

}  // namespace assay_reference

#if ASSAY_REFERENCE_DTYPE == 0
typedef double assay_real;
#elif ASSAY_REFERENCE_DTYPE == 1
typedef float assay_real;
#elif ASSAY_REFERENCE_DTYPE == 2
typedef assay_reference::binary16 assay_real;
#elif ASSAY_REFERENCE_DTYPE == 3
typedef assay_reference::bfloat16 assay_real;
#else
#error "ASSAY_REFERENCE_DTYPE must be 0 (double), 1 (float), 2 (binary16) or 3 (bfloat16)"
#endif

#endif /* ASSAY_REFERENCE_H */
