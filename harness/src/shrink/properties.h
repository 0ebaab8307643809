// After shrinking: which properties of the shrunk case its failure depends on,
// for any verdict. Each probe changes one property of the shrunk case (a
// dimension; a tensor's orientation, offset or leading dimension) and runs
// it like a shrink attempt; a property is named when a change makes the
// failure go away (the probe passes), e.g.
//   fails at n = 1 (n % 4 != 0); passes for n = 4
//   fails at offset(A) = 1 (A not 16-byte aligned); passes for offset(A) = 0, offset(A) = 4
// The parenthesis is a divisibility (dimensions) or byte alignment (offsets,
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

// One note per property that matters, in probe order: layouts of A, B, C,
// then m, n, k. `runs` is increased by the number of cases run.
std::vector<std::string> property_notes(const Spec& spec, const Case& shrunk, Verdict verdict,
                                        const CaseProbe& probe, RunClock& clock, int& runs);

}  // namespace assay::shrink_detail
