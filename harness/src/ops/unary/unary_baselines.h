// The published checkers' rules as written for unary activations
// (docs/baselines.md, "unary activations").
#pragma once
#include <string_view>

#include "ops/op.h"
#include "ops/unary/unary_problem.h"

namespace assay::unary {

baseline::BaselineResult run_baseline(const Op& op, const Settings& s, std::string_view rule, Backend& backend,
                                      Runner& runner, const Spec& spec, const baseline::BaselineOptions& opt);

}  // namespace assay::unary
