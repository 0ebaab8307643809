// After shrinking: which properties of the shrunk case its failure depends on,
// for any verdict. Each probe changes one property of the shrunk case (a
// size; a tensor's orientation, offset or leading dimension, through
// Op::resize and Op::with_layout) and runs it like a shrink attempt; a
// property is named when a change makes the failure go away (the probe
// passes), e.g. for a size `len` and a tensor `X`:
//   fails at len = 1 (len % 4 != 0); passes for len = 4
//   fails at offset(X) = 1 (X not 16-byte aligned); passes for offset(X) = 0, offset(X) = 4
// The parenthesis is a divisibility (sizes) or byte alignment (offsets,
// leading dimensions) that the failing value lacks, the nearest value with it
// passes, values below it failed, and the failing value plus that step fails
// the same way again.
#pragma once
#include <string>
#include <vector>

#include "shrink/trials.h"

namespace assay::shrink_detail {

// At most this many probes per shrunk case: a crash costs a fresh worker, a
// hang its timeout. The clock (the shrinker's time limit) bounds them too.
inline constexpr int kMaxPropertyRuns = 24;

// One note per property that matters, in probe order: the layouts of the
// case's tensors in its order, then its sizes in its order. `runs` is
// increased by the number of cases run.
std::vector<std::string> property_notes(const Op& op, const Spec& spec, const Case& shrunk, Verdict verdict,
                                        const CaseProbe& probe, RunClock& clock, int& runs);

}  // namespace assay::shrink_detail
