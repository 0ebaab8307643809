// attention cases for the gate: value recipes that make large logits,
// exact logits and non-finite ones; a deterministic sweep of sequence
// lengths around tile edges, causal alignments, head ratios, head dims,
// scales, layouts and values (cheap and telling first); seeded random
// cases; fitting to the spec's requires; and what a case costs.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/attention/attention_problem.h"
#include "ops/op.h"

namespace assay::attention {

inline constexpr Recipe kRecipes[] = {Recipe::uniform, Recipe::ints, Recipe::mixed, Recipe::specials,
                                      Recipe::offset};

RecipeParams recipe_params(const Case& c, int tensor);

std::vector<Case> sweep(const Spec& spec, const Settings& s, uint64_t seed, const SweepTarget& target);
std::optional<Case> random_case(const Spec& spec, const Settings& s, uint64_t seed, uint64_t index,
                                const GenLimits& lim);
// The case if the spec's requires hold, else the nearest variant: layouts
// made plain, the scale 1/sqrt(d), causal flipped, sizes rounded up to
// multiples, then halved, heads made equal; nullopt if none.
std::optional<Case> fit_requires(const Case& c, const Spec& spec);

// Σ over query rows of the keys each sees: the logits a kernel computes.
double visible_pairs(const Sizes& z, bool causal);
double work(const Case& c);  // multiply-adds: visible pairs times (d + dv)
double case_bytes(const Case& c);
double host_bytes(const Case& c, BackendKind backend);
double default_timeout(const Case& c, BackendKind backend);
bool huge_case_fits(const Case& c, const SweepTarget& target);

}  // namespace assay::attention
