// Norm cases for the gate: value recipes, the deterministic sweep (row
// lengths, row counts past a grid limit, cancellation, constant rows,
// magnitudes, specials, eps, layouts with broadcast weights, batches),
// seeded random cases, fitting to the spec's requires, and costs.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/op.h"
#include "ops/norm/norm_problem.h"

namespace assay::norm {

// The recipes cases draw x from (random cases, the fuzz genome).
inline constexpr Recipe kRecipes[] = {Recipe::uniform, Recipe::ints, Recipe::mixed, Recipe::specials, Recipe::offset};

RecipeParams recipe_params(const Case& c, int tensor);

std::vector<Case> sweep(const Op& op, const Spec& spec, bool rms, uint64_t seed, const SweepTarget& target);
std::optional<Case> random_case(const Op& op, const Spec& spec, bool rms, uint64_t seed, uint64_t index,
                                const GenLimits& lim);
std::optional<Case> fit_requires(const Case& c, const Spec& spec);

double work(const Case& c);  // elements of x
double case_bytes(const Case& c);
double host_bytes(const Case& c, BackendKind backend);
double default_timeout(const Case& c, BackendKind backend);
bool huge_case_fits(const Case& c, const SweepTarget& target);

}  // namespace assay::norm
