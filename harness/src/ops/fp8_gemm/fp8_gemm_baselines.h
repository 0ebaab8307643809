// The published checkers' rules for fp8_gemm (docs/baselines.md,
// "fp8_gemm"), DeepGEMM's own among them.
#pragma once
#include <string_view>

#include "baseline/baseline.h"
#include "ops/fp8_gemm/fp8_gemm_problem.h"
#include "ops/op.h"

namespace assay::fp8_gemm {

baseline::BaselineResult run_baseline(const Op& op, std::string_view rule, Backend& backend, Runner& runner,
                                      const Spec& spec, const baseline::BaselineOptions& opt);

// DeepGEMM's calc_diff: 1 - 2 Σ xy / Σ (x² + y²) over the whole tensor (0
// where both are all zero; NaN where either holds a NaN or an Inf).
double deepgemm_difference(const std::vector<double>& x, const std::vector<double>& y);
inline constexpr double kDeepGemmThreshold = 1e-3;

}  // namespace assay::fp8_gemm
