#include "ops/attention/attention_tolerance.h"

#include <cmath>

#include "exec/patterns.h"
#include "ops/softmax/softmax_tolerance.h"

namespace assay::attention {
namespace {

double half_subnormal(DType t) { return 0.5 * std::ldexp(1.0, min_normal_exp(t) - (mantissa_bits(t) - 1)); }

Tolerance one(DType out, double scale, Subnormals subnormals) {
  Tolerance t;
  t.out = out;
  t.u_eff = 1.0;  // bound is the error itself (attention_math.h)
  t.scale = scale;
  t.poisoned = true;  // o and lse are pure outputs
  t.poison = poison_bits(out);
  // Near zero the error is absolute: exp's result below f32's normal range,
  // and the reference's own rounding into the output type.
  t.abs_extra = 2.0 * half_subnormal(DType::f32) + half_subnormal(out);
  if (subnormals == Subnormals::flush)
    t.abs_extra += std::ldexp(1.0, min_normal_exp(DType::f32)) + std::ldexp(1.0, min_normal_exp(out));
  return t;
}

}  // namespace

Model model_of(const Settings& s, Compute compute) {
  Model m;
  // The softmax part runs in f32 (f64 when the kernel claims f64): tf32 is
  // the tensor cores' input type, not the softmax's.
  const Compute soft = compute == Compute::f64 ? Compute::f64 : Compute::f32;
  softmax::Settings ss;
  ss.math = s.math, ss.empty_zero = true;
  m.sm = softmax::error_model(ss, soft, DType::f32);
  m.u_acc = std::ldexp(1.0, -mantissa_bits(soft));
  // TF32 holds 11 significant bits: f32 inputs (and P) are rounded to it
  // before each product; f16 and bf16 inputs fit exactly, which the bound
  // does not tell apart (it charges every product).
  m.u_in = compute == Compute::tf32 ? std::ldexp(1.0, -11) : 0.0;
  if (s.p_dtype != DType::f32) {
    m.u_p = std::ldexp(1.0, -mantissa_bits(s.p_dtype));
    m.tiny_p = half_subnormal(s.p_dtype);
  }
  m.empty_nan = s.empty_nan;
  return m;
}

Tolerances tolerances(const Case& c, double scale, Subnormals subnormals) {
  return Tolerances{one(c.tensors[O].dtype, scale, subnormals), one(DType::f32, scale, subnormals)};
}

}  // namespace assay::attention
