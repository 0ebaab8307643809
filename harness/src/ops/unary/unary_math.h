// The FP64 reference of one unary activation and its error bound, per
// element, as both references run it (unary_reference_host.cpp in a loop,
// unary_reference_cuda.cu one element per thread). docs/tolerance.md
// ("unary activations") derives every bound; docs/ops/unary.md gives the
// IEEE rules the reference follows.
// Compiled by nvcc as C++17 too: plain structs, no library beyond <cmath>.
#pragma once
#include <cmath>
#include <cstdint>

#include "core/hd.h"

namespace assay::unary {

enum class Fn : uint8_t { relu, gelu, gelu_tanh, silu, sigmoid, exp, tanh };

// What the tolerance knows of the kernel's arithmetic (unary_tolerance.cpp
// fills it from the spec): the compute type's unit roundoff and range, and
// the declared library's errors.
struct ErrorModel {
  Fn fn = Fn::relu;
  double u = 0;             // unit roundoff of the compute type, 2^-p
  double u_conv = 0;        // converting x into the compute type (0 when it holds x exactly)
  double tiny = 0;          // the compute type's subnormal spacing
  double max = 0;           // the compute type's largest finite value: a result past it may be Inf
  double log_max = 0;       // its log: exp overflows past it
  double exp_ulps = 1;      // exp(a) errs by exp_ulps + exp_ulps_per * |a| ulps
  double exp_ulps_per = 0;
  double erf_ulps = 1;
  double tanh_ulps = 1;     // ... or, when tanh_rel > 0, by tanh_rel relative (tanh.approx)
  double tanh_rel = 0;
  double div_rel = 0;       // relative error of a division (u for IEEE, 4u for __fdividef)
  bool div_zero_big = false;  // __fdividef: 0 for a denominator past 2^126
};

// gelu_tanh's constants: sqrt(2/pi) and the cubic coefficient.
constexpr double kGeluK0 = 0.7978845608028654;
constexpr double kGeluK1 = 0.044715;
constexpr double kSqrtHalf = 0.7071067811865476;
constexpr double kTwoOverSqrtPi = 1.1283791670955126;

ASSAY_HD double sigmoid_of(double a) { return 1.0 / (1.0 + exp(-a)); }

// The exact function in FP64 (NaN in, NaN out; the rules of docs/ops/unary.md).
ASSAY_HD double apply(Fn fn, double x) {
  if (x != x) return x;
  switch (fn) {
    case Fn::relu: return x > 0 ? x : 0.0;  // -0 and negatives: +0 (either zero is accepted)
    case Fn::gelu:
      // erfc keeps its digits where 1 + erf(x / sqrt 2) cancels; -Inf * 0 = NaN (torch).
      if (x == -INFINITY) return NAN;
      return x == INFINITY ? x : 0.5 * x * erfc(-x * kSqrtHalf);
    case Fn::gelu_tanh: {
      // 0.5 (1 + tanh a) = sigmoid(2a): no cancellation for negative x.
      if (x == -INFINITY) return NAN;
      if (x == INFINITY) return x;
      const double a = kGeluK0 * (x + kGeluK1 * x * x * x);
      return x * sigmoid_of(2.0 * a);
    }
    case Fn::silu: return x == -INFINITY ? NAN : x * sigmoid_of(x);  // -Inf * 0 = NaN (torch)
    case Fn::sigmoid: return sigmoid_of(x);
    case Fn::exp: return exp(x);
    case Fn::tanh: return tanh(x);
  }
  return NAN;
}

// Relative error of the kernel's exp(a) (an ulp is at most 2u relative).
ASSAY_HD double exp_rel(const ErrorModel& e, double a) { return 2.0 * e.u * (e.exp_ulps + e.exp_ulps_per * fabs(a)); }
ASSAY_HD double tanh_rel(const ErrorModel& e) { return e.tanh_rel > 0 ? e.tanh_rel : 2.0 * e.u * e.tanh_ulps; }

// Where exp(a) overflows the compute type, formulas such as x / (1 + exp(-x))
// give 0 for a result of at most |y| (torch's silu and sigmoid do), and
// __fdividef gives 0 once the denominator passes 2^126.
ASSAY_HD double overflow_allowance(const ErrorModel& e, double a, double y) {
  if (a > e.log_max - 0.7) return fabs(y);  // (past log(max / 2): 1 + exp(a) rounds to Inf)
  if (e.div_zero_big && a > 87.0) return fabs(y);  // exp(a) + 1 > 2^126 (f32 fast division)
  return 0.0;
}

// x's reference and bound: the error allowed before the safety factor T,
// the output's rounding (1 ulp) and the floor F near zero, which compare()
// and unary_tolerance.cpp add. Bound 0 means exact (relu).
ASSAY_HD void element_bound(const ErrorModel& e, double x, double y, double* bound);
ASSAY_HD void element(const ErrorModel& e, double x, double* ref, double* bound) {
  const double y = apply(e.fn, x);
  element_bound(e, x, y, bound);
  *ref = y;
  // A result past the compute type's range may come back as Inf (compute f16's exp past 11.09).
  if (fabs(y) > e.max && fabs(y) < INFINITY) *bound = INFINITY;
}
ASSAY_HD void element_bound(const ErrorModel& e, double x, double y, double* bound) {
  *bound = 0;
  if (!(fabs(x) < INFINITY) || y != y) return;  // NaN and Inf inputs: the class decides
  const double ax = fabs(x), u = e.u, ay = fabs(y);
  switch (e.fn) {
    case Fn::relu:
      // max(x, 0) is exact; only converting x into a narrower compute type rounds.
      *bound = x > 0 ? e.u_conv * ax : 0.0;
      return;
    case Fn::exp: {
      // The library's ulps (below the normal range an ulp is the subnormal
      // spacing), and x's conversion as a relative u_conv |x| in exp.
      *bound = ay * (exp_rel(e, x) + e.u_conv * ax) + (e.exp_ulps + e.exp_ulps_per * ax) * e.tiny;
      return;
    }
    case Fn::sigmoid: {
      // 1 / (1 + exp(-x)) errs by (1 - y) e_exp + u + div relative; the
      // branch exp(x) / (1 + exp(x)) for x < 0 by 2 e_exp + u + div: allow
      // the larger. Conversion: sigmoid' x = y (1 - y) x.
      const double r = 2.0 * exp_rel(e, x) + u + e.div_rel;
      *bound = ay * r + e.u_conv * ax * y * (1.0 - y) + (e.exp_ulps + e.exp_ulps_per * ax) * e.tiny +
               overflow_allowance(e, -x, y);
      return;
    }
    case Fn::silu: {
      // x / (1 + exp(-x)) as sigmoid, or x * sigmoid(x): one more product.
      const double s = sigmoid_of(x);
      const double r = 2.0 * exp_rel(e, x) + 2.0 * u + e.div_rel;
      const double d = s * (1.0 + x * (1.0 - s));  // silu'
      *bound = ay * r + e.u_conv * ax * fabs(d) + ax * (e.exp_ulps + e.exp_ulps_per * ax) * e.tiny +
               overflow_allowance(e, -x, y);
      return;
    }
    case Fn::tanh: {
      const double t = y;
      *bound = ay * tanh_rel(e) + e.u_conv * ax * (1.0 - t * t) + e.tanh_ulps * e.tiny;
      return;
    }
    case Fn::gelu: {
      // z = x / sqrt 2 (the constant and the product: 2u), E = erf(z) with
      // its ulps and z's error carried by erf' = 2/sqrt(pi) e^(-z^2), then
      // s = 1 + E, 0.5 x s. For x << 0, E is near -1 and s cancels: the
      // error is then relative to |x| u, not to |y|.
      const double z = x * kSqrtHalf;
      const double E = erf(z), s = 1.0 + E;
      const double inner = 2.0 * u * e.erf_ulps * fabs(E) + kTwoOverSqrtPi * exp(-z * z) * fabs(z) * 2.0 * u +
                           u * fabs(s) + e.erf_ulps * e.tiny;
      const double d = 0.5 * erfc(-z) + x * exp(-0.5 * x * x) * (0.5 * kTwoOverSqrtPi * kSqrtHalf);  // gelu'
      *bound = 0.5 * ax * inner + u * ay + e.u_conv * ax * fabs(d);
      return;
    }
    case Fn::gelu_tanh: {
      // a = k0 (x + k1 x^3): constants, cube, sum of like signs, product: 8u
      // relative; t = tanh(a) with its error and a's carried by 1 - t^2;
      // s = 1 + t, 0.5 x s (cancelling for x << 0 like gelu).
      const double a = kGeluK0 * (x + kGeluK1 * x * x * x);
      const double sg = sigmoid_of(2.0 * a);  // 0.5 (1 + t)
      const double t = 2.0 * sg - 1.0, sech2 = 4.0 * sg * (1.0 - sg);
      const double carried = sech2 > 0 ? sech2 * fabs(a) * 8.0 * u : 0.0;  // (a may be Inf for huge f64 x)
      const double inner = tanh_rel(e) * fabs(t) + carried + u * 2.0 * sg + e.tanh_ulps * e.tiny;
      const double d = sg + 0.5 * x * sech2 * kGeluK0 * (1.0 + 3.0 * kGeluK1 * x * x);  // gelu_tanh'
      *bound = 0.5 * ax * inner + u * ay + e.u_conv * ax * fabs(d);
      return;
    }
  }
}

}  // namespace assay::unary
