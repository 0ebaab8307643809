#include "ops/reduce/reduce_tolerance.h"

#include <cmath>

#include "exec/patterns.h"

namespace assay::reduce {

ErrorModel error_model(const Settings& s, Compute compute, DType x, Subnormals subnormals) {
  ErrorModel e;
  e.op = s.op, e.propagate = s.propagate, e.ties_any = s.ties_any;
  const int p = mantissa_bits(compute);
  const ComputeFormat cf = format_of(compute);
  e.u = std::ldexp(1.0, -p);
  // x converted into a narrower compute type (f32 data summed in f16).
  e.u_conv = (p < mantissa_bits(x) || cf.emin > min_normal_exp(x)) ? e.u : 0.0;
  e.tiny = min_subnormal(cf);
  e.exact_limit = std::ldexp(1.0, p);
  e.max_compute = cf.max;
  e.flush = subnormals == Subnormals::flush ? std::ldexp(1.0, cf.emin) : 0.0;
  return e;
}

Tolerance tolerance(DType y, double scale, Subnormals subnormals) {
  Tolerance t;
  t.out = y;
  t.u_eff = 1.0;  // bound is the error itself (reduce_math.h)
  t.scale = scale;
  // Bound 0 (max, min, indices, exact integer sums): bit for bit. Any
  // inexact bound holds at least a subnormal spacing, so this limit never
  // catches one.
  t.exact = true;
  t.exact_bits = -1074;
  t.poisoned = true;  // y is a pure output
  t.poison = poison_bits(y);
  t.nonfinite_above = 1e300;  // an unbounded element (past the compute type) may be anything
  if (!is_integer(y)) {
    const int emin = min_normal_exp(y);
    t.abs_extra = 0.5 * std::ldexp(1.0, emin - (mantissa_bits(y) - 1));  // the reference's rounding near 0
    if (subnormals == Subnormals::flush) t.abs_extra += std::ldexp(1.0, emin);
  }
  return t;
}

}  // namespace assay::reduce
