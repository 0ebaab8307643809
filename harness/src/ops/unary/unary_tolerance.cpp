#include "ops/unary/unary_tolerance.h"

#include <cmath>

#include "exec/patterns.h"

namespace assay::unary {
namespace {

ComputeFormat format_of_dtype(DType t) {
  switch (t) {
    case DType::f64: return format_of(Compute::f64);
    case DType::f16: return format_of(Compute::f16);
    case DType::bf16: return format_of(Compute::bf16);
    default: return format_of(Compute::f32);
  }
}
double min_normal(ComputeFormat f) { return std::ldexp(1.0, f.emin); }

}  // namespace

ErrorModel error_model(const Settings& s, Compute compute, DType x) {
  ErrorModel e;
  e.fn = s.fn;
  const int p = mantissa_bits(compute);
  e.u = std::ldexp(1.0, -p);
  const ComputeFormat cf = format_of(compute);
  // x converted into a narrower compute type (f32 data computed in f16) moves by u relative.
  e.u_conv = (p < mantissa_bits(x) || cf.emin > min_normal_exp(x)) ? e.u : 0.0;
  e.tiny = min_subnormal(cf);
  e.max = cf.max, e.log_max = std::log(cf.max);
  e.div_rel = e.u;  // IEEE division: correctly rounded
  const bool f64 = compute == Compute::f64;
  switch (s.math) {
    case Math::ieee:
      // glibc (x86_64): expf/exp below 1 ulp, erff/erf 1, tanhf/tanh measured
      // at 2.08 ulp (glibc 2.36, 4M points in [-10, 10]): 3 allowed.
      e.exp_ulps = 1, e.erf_ulps = 1, e.tanh_ulps = 3;
      break;
    case Math::cuda:
      // CUDA C++ Programming Guide, Mathematical Functions appendix: expf 2,
      // erff 2, tanhf 2 ulp; exp 1, erf 2, tanh 1 (double). The f16/bf16
      // functions document no bound: 2 assumed (they compute through f32).
      e.exp_ulps = f64 ? 1 : 2, e.erf_ulps = 2, e.tanh_ulps = f64 ? 1 : 2;
      break;
    case Math::fast:
      if (compute == Compute::f32) {
        // Intrinsics: __expf 2 + floor(|1.173 a|) ulp; __tanhf (tanh.approx.f32)
        // 2^-10.987 relative; __fdividef 2 ulp, and 0 for a denominator past
        // 2^126; erff has no intrinsic (2 ulp as cuda).
        e.exp_ulps = 2, e.exp_ulps_per = 1.173, e.erf_ulps = 2, e.tanh_ulps = 2;
        e.tanh_rel = std::ldexp(1.0, -11) * std::pow(2.0, 0.013);
        e.div_rel = 4.0 * e.u, e.div_zero_big = true;
      } else {
        e.exp_ulps = f64 ? 1 : 2, e.erf_ulps = 2, e.tanh_ulps = f64 ? 1 : 2;
      }
      break;
  }
  return e;
}

Tolerance tolerance(DType y, Compute compute, double scale, Subnormals subnormals) {
  Tolerance t;
  t.out = y;
  t.u_eff = 1.0;  // bound[i] is the error itself (unary_math.h)
  t.scale = scale;
  t.poisoned = true;  // y is a pure output
  t.poison = poison_bits(y);
  // bound 0 means the formula is exact (relu, odd functions at 0): bit for
  // bit, up to the sign of zero. ldexp(1, -1100) is 0: only bound <= 0.
  t.exact = subnormals == Subnormals::ieee;
  t.exact_bits = -1100;
  // A result past the compute type's range carries an infinite bound
  // (unary_math.h): there it may come back as Inf.
  t.nonfinite_above = 1e308;
  // Near zero the error is absolute: a product or quotient landing among the
  // compute type's subnormals loses up to half their spacing (twice: 0.5 x
  // and the final product), half y's own spacing for the reference's rounding.
  const ComputeFormat cf = format_of(compute);
  t.abs_extra = min_subnormal(cf) + 0.5 * min_subnormal(format_of_dtype(y));
  if (subnormals == Subnormals::flush) t.abs_extra += min_normal(cf) + min_normal(format_of_dtype(y));
  return t;
}

}  // namespace assay::unary
