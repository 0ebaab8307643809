// Feedback for libFuzzer beyond code coverage: each case lights up features
// in libFuzzer's extra counters (a section libFuzzer zeroes before every input
// and reads after it), so inputs that reach a new shape class, layout class,
// value class, error magnitude or verdict are kept. A kernel whose error grows
// as inputs change is pushed toward its failure.
#pragma once
#include "case/case.h"
#include "exec/executor.h"

namespace assay::fuzz {

// Sets the features of one case run in the extra counters.
void record_features(const Case& c, const CaseOutcome& o);
// When false, no feature is set (to measure how much the feedback matters).
void enable_features(bool on);

// The signature failures are deduplicated by: verdict + shape and layout class.
std::string failure_signature(const Case& c, Verdict v);

}  // namespace assay::fuzz
