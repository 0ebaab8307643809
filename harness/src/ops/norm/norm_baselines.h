// The three published rules (kernelbench, tutorial, assert_close) as written
// for layernorm and rmsnorm (norm_baselines.cpp and docs/baselines.md say
// where each is from).
#pragma once
#include <string_view>

#include "baseline/baseline.h"
#include "ops/norm/norm_problem.h"
#include "ops/op.h"

namespace assay::norm {

baseline::BaselineResult run_baseline(const Op& op, const Settings& s, std::string_view rule, Backend& backend,
                                      Runner& runner, const Spec& spec, const baseline::BaselineOptions& opt);

}  // namespace assay::norm
