// The unary family's tolerance model (docs/tolerance.md, "unary
// activations"): per element, |y - ref| <= T * bound + 1 ulp(y's dtype) + a
// floor near zero; bound from the FP64 reference (unary_math.h) and the
// ErrorModel built here from the spec's fn, math and compute. relu is exact.
#pragma once
#include "judge/compare.h"
#include "ops/unary/unary_math.h"
#include "ops/unary/unary_problem.h"

namespace assay::unary {

// T where --tolerance-scale does not say (docs/tolerance.md: calibrated on
// the host zoo; the H200 figures are still to come).
inline constexpr double kDefaultScale = 2.0;

// The error model of a kernel with these settings computing in `compute`
// on inputs of dtype x.
ErrorModel error_model(const Settings& s, Compute compute, DType x);
// compare()'s parameters: u_eff = 1 (the bound is already an error); exact
// where the bound is 0 (relu, and odd functions at 0) unless subnormals may
// flush; the poison of y; the floor below the normal range.
Tolerance tolerance(DType y, Compute compute, double scale, Subnormals subnormals);

}  // namespace assay::unary
