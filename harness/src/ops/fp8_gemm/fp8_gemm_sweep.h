// fp8_gemm cases for the gate: value recipes for FP8 data (the format's
// range, its largest finite value, NaN and Inf, positive data) and for the
// scales (zero, subnormal and huge ones); a deterministic sweep of scale-block
// tails, long k, layouts and values (cheap and telling first); seeded random
// cases; fitting to the spec's requires; and what a case costs.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/fp8_gemm/fp8_gemm_problem.h"
#include "ops/op.h"

namespace assay::fp8_gemm {

inline constexpr Recipe kRecipes[] = {Recipe::uniform, Recipe::mixed, Recipe::ints, Recipe::specials,
                                      Recipe::offset};

RecipeParams recipe_params(const Case& c, int tensor);

std::vector<Case> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target);
std::optional<Case> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim);
// The case if the spec's requires hold, else the nearest variant: sizes
// rounded up to multiples, then halved, each also with plain layouts;
// nullopt if none.
std::optional<Case> fit_requires(const Case& c, const Spec& spec);

double work(const Case& c);  // multiply-adds: m n k
double case_bytes(const Case& c);
double host_bytes(const Case& c, BackendKind backend);
double default_timeout(const Case& c, BackendKind backend);
bool huge_case_fits(const Case& c, const SweepTarget& target);

}  // namespace assay::fp8_gemm
