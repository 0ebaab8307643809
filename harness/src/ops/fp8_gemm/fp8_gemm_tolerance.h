// The fp8_gemm family's tolerance model (docs/tolerance.md, "fp8_gemm"):
// per element of d, |got - ref| <= T * (rel * (|A'||B'|)_ij + floor_ij) + 1 ulp
// of d's dtype, where A', B' are the dequantized operands; rel follows
// from the declared accumulation (`accumulate`, `promote_every`).
#pragma once
#include "judge/compare.h"
#include "ops/fp8_gemm/fp8_gemm_problem.h"
#include "ops/fp8_gemm/fp8_gemm_reference.h"
#include "spec/spec.h"

namespace assay::fp8_gemm {

// T where --tolerance-scale does not say (docs/tolerance.md).
inline constexpr double kDefaultScale = 2.0;

// γ_n(u) = n u / (1 - n u): n roundings of unit roundoff u (Higham).
double gamma(double n, double u);
// The relative error of the accumulation of k products under `s`.
double accumulation_error(const Settings& s, int64_t k);
ErrorModel error_model(const Settings& s, int64_t k, Subnormals subnormals);
// compare()'s parameters for d.
Tolerance tolerance(const Case& c, const ErrorModel& e, double scale);

}  // namespace assay::fp8_gemm
