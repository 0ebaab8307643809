// The published checkers' rules as they would be written for MoE routing
// (docs/baselines.md, "moe_topk").
#pragma once
#include <string_view>

#include "baseline/baseline.h"
#include "ops/moe_topk/moe_topk_problem.h"
#include "ops/op.h"

namespace assay::moe_topk {

baseline::BaselineResult run_baseline(const Op& op, const Settings& s, std::string_view rule, Backend& backend,
                                      Runner& runner, const Spec& spec, const baseline::BaselineOptions& opt);

}  // namespace assay::moe_topk
