// Unary cases for the gate: the value recipes per fn, a deterministic sweep
// (vector widths and tails, misaligning offsets, row lengths, value ranges,
// layouts, batches, grid and index limits; cheap and telling first), seeded
// random cases, fitting to the spec's requires, and what a case costs.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/op.h"
#include "ops/unary/unary_problem.h"

namespace assay::unary {

// The recipes the sweep, random cases and the fuzz genome draw from.
inline constexpr Recipe kRecipes[] = {Recipe::uniform, Recipe::mixed, Recipe::specials, Recipe::ints, Recipe::offset};

RecipeParams recipe_params(const Case& c, int tensor);

std::vector<Case> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target);
std::optional<Case> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim);
// The case itself if it satisfies the spec's requires, else the nearest
// variant rows::fit_requires finds (layouts relaxed, sizes rounded, halved,
// a batch flattened); nullopt if none.
std::optional<Case> fit_requires(const Case& c, const Spec& spec);

double work(const Case& c);  // elements of x
double case_bytes(const Case& c);
double host_bytes(const Case& c, BackendKind backend);
double default_timeout(const Case& c, BackendKind backend);
bool huge_case_fits(const Case& c, const SweepTarget& target);

}  // namespace assay::unary
