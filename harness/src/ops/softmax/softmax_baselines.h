// The three published rules (kernelbench, tutorial, assert_close) as written
// for softmax and log_softmax (softmax_baselines.cpp says where each is from).
#pragma once
#include <string_view>

#include "baseline/baseline.h"
#include "ops/op.h"
#include "ops/softmax/softmax_problem.h"

namespace assay::softmax {

baseline::BaselineResult run_baseline(const Op& op, const Settings& s, std::string_view rule, Backend& backend,
                                      Runner& runner, const Spec& spec, const baseline::BaselineOptions& opt);

}  // namespace assay::softmax
