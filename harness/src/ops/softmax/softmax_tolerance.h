// The softmax family's tolerance model (docs/tolerance.md, "softmax and
// log_softmax"): per element, |y - ref| <= T * bound + 1 ulp(y's dtype) +
// an absolute floor near zero, where bound comes from the FP64 reference
// (softmax_math.h) and the ErrorModel built here from the spec's claims.
#pragma once
#include "judge/compare.h"
#include "ops/softmax/softmax_math.h"
#include "ops/softmax/softmax_problem.h"

namespace assay::softmax {

// T where --tolerance-scale does not say (calibrated per GPU: docs/tolerance.md).
inline constexpr double kDefaultScale = 2.0;

// The error model of a kernel with these settings computing in `compute`
// on inputs of dtype x.
ErrorModel error_model(const Settings& s, Compute compute, DType x);
// compare()'s parameters: u_eff = 1 (the bound is already an error), the
// poison of y, the floor below the normal range (and under `flush`, the
// smallest normals of y's dtype and the compute type).
Tolerance tolerance(DType y, Compute compute, double scale, Subnormals subnormals);

}  // namespace assay::softmax
