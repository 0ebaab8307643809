// The attention family's tolerance model (docs/tolerance.md, "attention"):
// per element of o and lse, |got - ref| <= T * bound + 1 ulp of the output
// type + an absolute floor, where bound comes from the FP64 reference
// (attention_math.h) under the Model built here from the spec's claims.
#pragma once
#include "judge/compare.h"
#include "ops/attention/attention_math.h"
#include "ops/attention/attention_problem.h"
#include "ops/attention/attention_reference.h"

namespace assay::attention {

// T where --tolerance-scale does not say (docs/tolerance.md).
inline constexpr double kDefaultScale = 2.0;

// The error model of a kernel with these settings accumulating in `compute`.
Model model_of(const Settings& s, Compute compute);
// compare()'s parameters for o (its dtype) and lse (f32).
Tolerances tolerances(const Case& c, double scale, Subnormals subnormals);

}  // namespace assay::attention
