// Softmax cases for the gate: the value recipes, a deterministic sweep of
// row lengths, row counts, layouts and values (cheap and telling first),
// seeded random cases, fitting to the spec's requires, and what a case costs.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/op.h"
#include "ops/softmax/softmax_problem.h"

namespace assay::softmax {

RecipeParams recipe_params(const Case& c, int tensor);

std::vector<Case> sweep(const Spec& spec, bool log, uint64_t seed, const SweepTarget& target);
std::optional<Case> random_case(const Spec& spec, bool log, uint64_t seed, uint64_t index, const GenLimits& lim);
// The case itself if it satisfies the spec's requires, else the nearest
// variant found: layouts relaxed, then sizes rounded up to multiples, then
// halved, then a batched case flattened to 2-D; nullopt if none.
std::optional<Case> fit_requires(const Case& c, const Spec& spec);

double work(const Case& c);  // elements of x
double case_bytes(const Case& c);
double host_bytes(const Case& c, BackendKind backend);
double default_timeout(const Case& c, BackendKind backend);
bool huge_case_fits(const Case& c, const SweepTarget& target);

}  // namespace assay::softmax
