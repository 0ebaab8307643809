#include "shrink/smallest.h"

#include <algorithm>

#include "shrink/trials.h"

namespace assay {

SmallestFailing smallest_failing(const Op& op, const Spec& spec, const Case& shrunk, Verdict verdict,
                                 const CaseProbe& probe, int max_probes, double max_seconds) {
  shrink_detail::RunClock clock(max_seconds);
  SmallestFailing r;
  Case base = shrunk;
  for (CaseTensor& t : base.tensors) t.keep = {};  // size properties, not value ones: every element as drawn
  std::vector<int64_t> sizes;
  for (const auto& s : shrunk.sizes) sizes.push_back(s.value);
  const size_t count = sizes.size();
  r.sizes = sizes, r.exact.assign(count, false);
  for (size_t d = 0; d < count; ++d) {
    const int64_t s = sizes[d];
    // Every value below s when few enough, else an evenly spaced grid.
    const int64_t step = std::max<int64_t>(1, (s + max_probes - 1) / max_probes);
    r.sizes[d] = s, r.exact[d] = step == 1;
    for (int64_t v = 0; v < s; v += step) {
      std::vector<int64_t> x_sizes = sizes;
      x_sizes[d] = v;
      Case x = op.resize(base, x_sizes, /*keep_layout=*/true);
      if (!shrink_detail::inside_spec(op, spec, x)) continue;
      if (clock.out_of_time()) {
        r.exact[d] = false;  // what is left unprobed may hold a smaller failing value
        break;
      }
      ++r.probes;
      Verdict got;
      try {
        got = clock.run(probe, x).verdict;
      } catch (const DeadlineReached&) {
        for (size_t e = d; e < count; ++e) r.sizes[e] = sizes[e], r.exact[e] = false;  // upper bounds
        return r;
      }
      if (got == verdict) {
        r.sizes[d] = v;
        break;
      }
    }
  }
  return r;
}

}  // namespace assay
