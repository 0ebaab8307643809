#include "shrink/smallest.h"

#include <algorithm>

#include "shrink/trials.h"

namespace assay {

SmallestFailing smallest_failing(const Spec& spec, const Case& shrunk, Verdict verdict, const CaseProbe& probe,
                                 int max_probes, double max_seconds) {
  shrink_detail::RunClock clock(max_seconds);
  SmallestFailing r;
  Case base = shrunk;
  base.keep = {};  // dimension properties, not value ones: every element as drawn
  const int64_t dims[3] = {shrunk.m, shrunk.n, shrunk.k};
  for (int d = 0; d < 3; ++d) {
    const int64_t s = dims[d];
    // Every value below s when few enough, else an evenly spaced grid.
    const int64_t step = std::max<int64_t>(1, (s + max_probes - 1) / max_probes);
    r.dims[d] = s, r.exact[d] = step == 1;
    for (int64_t v = 0; v < s; v += step) {
      int64_t m = d == 0 ? v : shrunk.m, n = d == 1 ? v : shrunk.n, k = d == 2 ? v : shrunk.k;
      Case x = shrink_detail::with_dims(base, m, n, k, true);
      if (!shrink_detail::inside_spec(spec, x)) continue;
      if (clock.out_of_time()) {
        r.exact[d] = false;  // what is left unprobed may hold a smaller failing value
        break;
      }
      ++r.probes;
      Verdict got;
      try {
        got = clock.run(probe, x).verdict;
      } catch (const DeadlineReached&) {
        for (int e = d; e < 3; ++e) r.dims[e] = dims[e], r.exact[e] = false;  // upper bounds
        return r;
      }
      if (got == verdict) {
        r.dims[d] = v;
        break;
      }
    }
  }
  return r;
}

}  // namespace assay
