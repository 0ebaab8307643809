// The reduce family's tolerance model (docs/tolerance.md, "reduce"): max,
// min and the arg-reductions exact; sum and mean within T * gamma_{n-1} *
// sum|x| (+ the conversions, underflow and the output's rounding), exact
// where integer inputs make every partial sum exact. The per-row bound comes
// from reduce_math.h with the ErrorModel built here from the spec's claims.
#pragma once
#include "judge/compare.h"
#include "ops/reduce/reduce_math.h"
#include "ops/reduce/reduce_problem.h"

namespace assay::reduce {

// T where --tolerance-scale does not say (docs/tolerance.md, "reduce").
inline constexpr double kDefaultScale = 2.0;

ErrorModel error_model(const Settings& s, Compute compute, DType x, Subnormals subnormals);
// compare()'s parameters: u_eff = 1 (the bound is already an error), exact
// matching where the bound is 0, the poison of y, the floor.
Tolerance tolerance(DType y, double scale, Subnormals subnormals);

}  // namespace assay::reduce
