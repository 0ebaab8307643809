// moe_topk cases for the gate: value recipes that make ties, huge logits
// and masked experts; a deterministic sweep of expert counts, topk, token
// counts, layouts and values (cheap and telling first); seeded random cases;
// fitting to the spec's requires; and what a case costs.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/moe_topk/moe_topk_problem.h"
#include "ops/op.h"

namespace assay::moe_topk {

inline constexpr Recipe kRecipes[] = {Recipe::uniform, Recipe::ints, Recipe::mixed, Recipe::specials,
                                      Recipe::offset};

RecipeParams recipe_params(const Case& c, int tensor);

std::vector<Case> sweep(const Spec& spec, const Settings& s, uint64_t seed, const SweepTarget& target);
std::optional<Case> random_case(const Spec& spec, const Settings& s, uint64_t seed, uint64_t index,
                                const GenLimits& lim);
// The case if the spec's requires hold (and the routing can take its
// sizes), else the nearest variant: layouts made plain, sizes rounded up
// to multiples, then halved; nullopt if none.
std::optional<Case> fit_requires(const Case& c, const Spec& spec, const Settings& s);

double work(const Case& c);  // logits' elements times (topk + 1): a naive kernel's scans
double case_bytes(const Case& c);
double host_bytes(const Case& c, BackendKind backend);
double default_timeout(const Case& c, BackendKind backend);
bool huge_case_fits(const Case& c, const SweepTarget& target);

}  // namespace assay::moe_topk
