#include "ops/softmax/softmax_tolerance.h"

#include <algorithm>
#include <cmath>

#include "exec/patterns.h"

namespace assay::softmax {
namespace {

double min_normal(ComputeFormat f) { return std::ldexp(1.0, f.emin); }
ComputeFormat format_of(DType t) {
  switch (t) {
    case DType::f64: return assay::format_of(Compute::f64);
    case DType::f16: return assay::format_of(Compute::f16);
    case DType::bf16: return assay::format_of(Compute::bf16);
    default: return assay::format_of(Compute::f32);
  }
}

}  // namespace

ErrorModel error_model(const Settings& s, Compute compute, DType x) {
  ErrorModel e;
  e.log = s.log, e.empty_zero = s.empty_zero;
  const int p = mantissa_bits(compute);
  e.u = std::ldexp(1.0, -p);
  // x converted into a narrower compute type (f32 data computed in f16 or
  // bf16): each of x_i and m moves by up to u relative.
  const ComputeFormat cf = assay::format_of(compute);
  e.u_conv = (p < mantissa_bits(x) || cf.emin > min_normal_exp(x)) ? e.u : 0.0;
  e.tiny = min_subnormal(cf);
  // exp and log, in ulps of the compute type (CUDA Math API, programming
  // guide's accuracy tables): `ieee` a faithful libm (< 1 ulp), `cuda`
  // expf 2 / logf 1 (double exp, log 1; f16/bf16 compute: 2 and 1 assumed,
  // the half functions document no bound), `fast` __expf
  // 2 + floor(|1.173 x|) and __logf 3 ulp or 2^-21.41 absolute in [0.5, 2]
  // (f32 only; other compute types as `cuda`).
  switch (s.math) {
    case Math::ieee: e.exp_ulps = 1, e.log_ulps = 1; break;
    case Math::cuda: e.exp_ulps = compute == Compute::f64 ? 1 : 2, e.log_ulps = 1; break;
    case Math::fast:
      if (compute == Compute::f32) {
        e.exp_ulps = 2, e.exp_ulps_per = 1.173, e.log_ulps = 3, e.log_abs = std::ldexp(1.0, -21) / std::pow(2.0, 0.41);
      } else {
        e.exp_ulps = compute == Compute::f64 ? 1 : 2, e.log_ulps = 1;
      }
      break;
  }
  return e;
}

Tolerance tolerance(DType y, Compute compute, double scale, Subnormals subnormals) {
  Tolerance t;
  t.out = y;
  t.u_eff = 1.0;  // bound[i] is the error itself (softmax_math.h)
  t.scale = scale;
  t.poisoned = true;  // y is a pure output
  t.poison = poison_bits(y);
  // Near zero the error is absolute: exp(d) landing below the compute
  // type's normal range loses up to half its subnormal spacing, and so may
  // the division (or multiply) after it; half y's own spacing for the
  // reference's rounding beside compare()'s ulp term.
  const ComputeFormat cf = assay::format_of(compute);
  t.abs_extra = min_subnormal(cf) + 0.5 * min_subnormal(format_of(y));
  if (subnormals == Subnormals::flush) t.abs_extra += min_normal(cf) + min_normal(format_of(y));
  return t;
}

}  // namespace assay::softmax
