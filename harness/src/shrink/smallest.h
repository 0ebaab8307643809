// How small can each size get? For a shrunk failing case, the smallest value
// of each of its sizes (one at a time, the others held, all inputs kept)
// that still fails the same way. The shrinker only tries a ladder of values;
// this probes upward from 0, so the acceptance check "each shrunk size is at
// most 2x the smallest failing one" has a number to compare with.
#pragma once
#include <cstdint>
#include <vector>

#include "ops/op.h"
#include "shrink/shrinker.h"

namespace assay {

struct SmallestFailing {
  // One per size of the case, in its order: the smallest failing value (the
  // shrunk value itself when nothing smaller fails), and whether it is exact
  // (false: probed on a grid, for a large size, so an upper bound).
  std::vector<int64_t> sizes;
  std::vector<bool> exact;
  int probes = 0;
};

// At most `max_probes` runs per size, none started after `max_seconds` (a
// size left unprobed keeps its shrunk value, not exact).
SmallestFailing smallest_failing(const Op& op, const Spec& spec, const Case& shrunk, Verdict verdict,
                                 const CaseProbe& probe, int max_probes = 64, double max_seconds = 1e9);

}  // namespace assay
