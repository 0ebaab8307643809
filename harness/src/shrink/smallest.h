// How small can each dimension get? For a shrunk failing case, the smallest
// value of m, n and k (one at a time, the other two held, all inputs kept)
// that still fails the same way. The shrinker only tries a ladder of values;
// this probes upward from 0, so the acceptance check "each shrunk dimension
// is at most 2x the smallest failing one" has a number to compare with.
#pragma once
#include <array>

#include "shrink/shrinker.h"

namespace assay {

struct SmallestFailing {
  std::array<int64_t, 3> dims{};      // m, n, k; the shrunk value itself when nothing smaller fails
  std::array<bool, 3> exact{};        // false: probed on a grid (a large dimension), an upper bound
  int probes = 0;
};

// At most `max_probes` runs per dimension, none started after `max_seconds`
// (a dimension left unprobed keeps its shrunk value, not exact).
SmallestFailing smallest_failing(const Spec& spec, const Case& shrunk, Verdict verdict, const CaseProbe& probe,
                                 int max_probes = 64, double max_seconds = 1e9);

}  // namespace assay
