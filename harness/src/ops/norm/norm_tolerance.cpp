#include "ops/norm/norm_tolerance.h"

#include <cmath>

#include "exec/patterns.h"

namespace assay::norm {
namespace {

ComputeFormat format_of(DType t) {
  switch (t) {
    case DType::f64: return assay::format_of(Compute::f64);
    case DType::f16: return assay::format_of(Compute::f16);
    case DType::bf16: return assay::format_of(Compute::bf16);
    default: return assay::format_of(Compute::f32);
  }
}

}  // namespace

ErrorModel error_model(const Settings& s, Compute compute, const Case& c, double T) {
  ErrorModel e;
  e.rms = s.rms;
  e.T = T;
  e.eps = c.scalars.empty() ? 0.0 : c.scalars[0].value;
  const int p = mantissa_bits(compute);
  e.u = std::ldexp(1.0, -p);
  const ComputeFormat cf = assay::format_of(compute);
  // Inputs converted into a narrower compute type (f64 data in f32) move by u.
  for (const CaseTensor& t : c.tensors)
    if (t.role == Role::input && (p < mantissa_bits(t.dtype) || cf.emin > min_normal_exp(t.dtype))) e.u_conv = e.u;
  e.tiny = min_subnormal(cf);
  // 1/sqrt in ulps of the compute type: ieee a correctly rounded sqrt and
  // division (or __frsqrt_rn); cuda rsqrtf (2 ulp, CUDA Math API); fast an
  // approximate rsqrt (rsqrt.approx.f32 is 2^-22.9 relative, sqrt.approx and
  // div.approx under --use_fast_math add theirs: 4 assumed).
  e.rsqrt_ulps = s.math == Math::ieee ? 1.0 : s.math == Math::cuda ? 2.0 : 4.0;
  if (compute == Compute::f64 && s.math != Math::ieee) e.rsqrt_ulps = 2.0;
  return e;
}

Tolerance tolerance(DType out, Compute compute, Subnormals subnormals, bool mean) {
  Tolerance t;
  t.out = out;
  t.u_eff = 1.0;  // the bound is already an error (norm_math.h)
  t.scale = 1.0;  // and T is inside it
  t.poisoned = true;
  t.poison = poison_bits(out);
  t.inf_may_be_nan = mean;
  t.abs_extra = 0.5 * min_subnormal(format_of(out));
  if (subnormals == Subnormals::flush)
    t.abs_extra += std::ldexp(1.0, assay::format_of(compute).emin) + std::ldexp(1.0, format_of(out).emin);
  return t;
}

}  // namespace assay::norm
