// The published checkers' rules as they would be written for attention
// (docs/baselines.md, "attention").
#pragma once
#include <string_view>

#include "baseline/baseline.h"
#include "ops/attention/attention_problem.h"
#include "ops/op.h"

namespace assay::attention {

baseline::BaselineResult run_baseline(const Op& op, const Settings& s, std::string_view rule, Backend& backend,
                                      Runner& runner, const Spec& spec, const baseline::BaselineOptions& opt);

}  // namespace assay::attention
