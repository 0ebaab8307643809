// The three published rules (kernelbench, tutorial, assert_close) as written
// for reductions (reduce_baselines.cpp says where each is from).
#pragma once
#include <string_view>

#include "baseline/baseline.h"
#include "ops/op.h"
#include "ops/reduce/reduce_problem.h"

namespace assay::reduce {

baseline::BaselineResult run_baseline(const Op& op, const Settings& s, std::string_view rule, Backend& backend,
                                      Runner& runner, const Spec& spec, const baseline::BaselineOptions& opt);

}  // namespace assay::reduce
