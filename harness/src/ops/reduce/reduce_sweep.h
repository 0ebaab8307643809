// Reduce cases for the gate: the value recipes, a deterministic sweep of
// row lengths, row counts, layouts and values (cheap and telling first),
// seeded random cases, fitting to the spec's requires, and what a case costs.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/op.h"
#include "ops/reduce/reduce_problem.h"

namespace assay::reduce {

inline constexpr Recipe kRecipes[] = {Recipe::uniform, Recipe::ints, Recipe::mixed, Recipe::specials,
                                      Recipe::offset};

RecipeParams recipe_params(const Case& c, int tensor, const Settings& s, Compute compute);

std::vector<Case> sweep(const Spec& spec, const Settings& s, uint64_t seed, const SweepTarget& target);
std::optional<Case> random_case(const Spec& spec, const Settings& s, uint64_t seed, uint64_t index,
                                const GenLimits& lim);
// rows::fit_requires with reduce's context and layouts.
std::optional<Case> fit_requires(const Case& c, const Spec& spec);
// The longest row the claimed compute type can sum with a useful bound.
int64_t max_row_length(const Spec& spec, const Settings& s);

double work(const Case& c);  // elements of x
double case_bytes(const Case& c);
double host_bytes(const Case& c, BackendKind backend);
double default_timeout(const Case& c, BackendKind backend);
bool huge_case_fits(const Case& c, const SweepTarget& target);

}  // namespace assay::reduce
