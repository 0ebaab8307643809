// The norm family's tolerance model (docs/tolerance.md, "layernorm and
// rmsnorm"): the ErrorModel the FP64 reference turns into per-row and
// per-element bounds (norm_math.h), and compare()'s parameters per output.
#pragma once
#include "judge/compare.h"
#include "ops/norm/norm_math.h"
#include "ops/norm/norm_problem.h"

namespace assay::norm {

// T where --tolerance-scale does not say (docs/tolerance.md says why 2).
inline constexpr double kDefaultScale = 2.0;

// The error model of a kernel with these settings computing in `compute`
// on a case (its input dtypes and eps), with safety factor T.
ErrorModel error_model(const Settings& s, Compute compute, const Case& c, double T);
// compare()'s parameters for an output of dtype `out`: scale 1 and u_eff 1
// (T is inside the bound), the poison, the floor; `mean`: NaN accepted
// where the reference is infinite.
Tolerance tolerance(DType out, Compute compute, Subnormals subnormals, bool mean);

}  // namespace assay::norm
