// GEMM's tolerance model (docs/tolerance.md): an element passes when
//   |c - ref| <= T * u_eff * (|alpha||A||B| + |beta||C0|) + 1 ulp(ref)
// with u_eff from the claimed compute precision and k; exact recipes must match.
#pragma once
#include "case/case.h"
#include "judge/compare.h"

namespace assay::gemm {

// Default T, calibrated on the H200 (docs/results/) with margin.
inline constexpr double kDefaultScale = 2.0;

Tolerance tolerance(const Case& c, Compute compute, double scale, uint64_t poison_bits);

}  // namespace assay::gemm
