// Feedback for libFuzzer beyond code coverage: each case lights up features
// in libFuzzer's extra counters (a section libFuzzer zeroes before every input
// and reads after it), so inputs that reach a new shape class, layout class,
// value class, error magnitude or verdict are kept. A kernel whose error grows
// as inputs change is pushed toward its failure.
#pragma once
#include "case/case.h"
#include "exec/executor.h"
#include "ops/op.h"

namespace assay::fuzz {

// Sets the features of one case run in the extra counters: each size's
// tail classes, tiny sizes and log2 magnitude; joint features of one size's
// tail class with another's (or its own) magnitude; each tensor's layout
// class, the recipe, which scalars are 0; the error's magnitude; the verdict.
// Only the verdict for a case costing more than the feature limits (Op::work
// and the tensors' elements): feedback rewards reaching a class cheaply and
// does not drag the campaign to slow cases.
void record_features(const Op& op, const Case& c, const CaseOutcome& o);
// on = false: no feature is set (to measure how much the feedback matters).
// Shape and error features only for cases up to 1/8 of lim's ordinary cost
// bounds: the class reached cheaply is what is worth keeping.
void enable_features(bool on, const CodecLimits& lim);

// The signature failures are deduplicated by: verdict + shape and layout class.
std::string failure_signature(const Case& c, Verdict v);

}  // namespace assay::fuzz
