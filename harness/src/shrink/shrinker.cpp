#include "shrink/shrinker.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "shrink/nonzeros.h"
#include "shrink/properties.h"
#include "shrink/trials.h"

namespace assay {
namespace {

using shrink_detail::with_dims;

// The share of the time limit the steps leave to the re-runs and property
// probes, so that a slow failure (a crash's fresh worker, a hang's timeout)
// still gets its explanation.
constexpr double kAfterShare = 0.25;

// Smaller values worth trying for a dimension, most desirable first.
std::vector<int64_t> smaller(int64_t d) {
  std::vector<int64_t> v = {0, 1, 2, 3};
  for (int64_t t : {8, 16, 32, 64, 128, 256}) v.insert(v.end(), {t - 1, t, t + 1});
  for (int64_t step = d / 2; step >= 1; step /= 2) v.push_back(d - step);  // binary search from below
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  v.erase(std::remove_if(v.begin(), v.end(), [d](int64_t x) { return x >= d; }), v.end());
  return v;
}

}  // namespace

ShrinkResult shrink(const Spec& spec, const Case& failing, const CaseOutcome& original, const CaseProbe& probe,
                    int max_attempts, double max_seconds) {
  shrink_detail::Trials s(spec, probe, failing, original.verdict, max_attempts, max_seconds,
                          kAfterShare * std::min(max_seconds, 1e9));
  Case best = failing;
  CaseOutcome best_outcome = original;
  auto take = [&](const Case& c) {
    if (!s.still_fails(c)) return false;
    best = c, best_outcome = s.last();
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    // Layouts: compact, row-major, no offsets; all at once, then one tensor at a time.
    Case plain = best;
    plain.a = gemm::make_layout(plain.m, plain.k, false), plain.b = gemm::make_layout(plain.k, plain.n, false);
    plain.c = gemm::make_layout(plain.m, plain.n, false);
    if (take(plain)) progress = true;
    for (int which = 0; which < 3 && !progress; ++which) {
      Case x = best;
      Layout* l[3] = {&x.a, &x.b, &x.c};
      int64_t rows[3] = {x.m, x.k, x.m}, cols[3] = {x.k, x.n, x.n};
      *l[which] = gemm::make_layout(rows[which], cols[which], false);
      progress |= take(x);
    }
    // Scalars: alpha = 1, beta = 0.
    for (auto [alpha, beta] : {std::pair{1.0, 0.0}, {1.0, best.beta}, {best.alpha, 0.0}}) {
      Case x = best;
      x.alpha = alpha, x.beta = beta;
      if (take(x)) progress = true;
    }
    // Values: small exact integers are the easiest to read.
    if (best.recipe != Recipe::ints) {
      Case x = best;
      x.recipe = Recipe::ints;
      progress |= take(x);
    }
    // Dimensions, one at a time, smallest candidate first.
    for (int dim = 0; dim < 3; ++dim) {
      int64_t d = dim == 0 ? best.m : dim == 1 ? best.n : best.k;
      for (int64_t v : smaller(d)) {
        Case x = with_dims(best, dim == 0 ? v : best.m, dim == 1 ? v : best.n, dim == 2 ? v : best.k, true);
        if (take(x)) {
          progress = true;
          break;
        }
      }
    }
  }
  // Last, the values: the fewest input elements that must be nonzero.
  std::string nonzeros = shrink_detail::cut_nonzeros(best, take);
  ShrinkResult r;
  r.shrunk = best, r.outcome = best_outcome, r.attempts = s.attempts();
  // Re-run three times: a failure that does not always come back is flaky.
  // When the steps ran out of time (a huge case takes seconds), once.
  shrink_detail::RunClock& clock = s.clock();
  const bool late = s.out_of_time();
  r.stopped = s.stopped();
  try {  // a probe stopped at the run's deadline ends the re-runs and notes, keeping the shrunk case
    for (r.reruns = 0; !r.stopped && r.reruns < (late ? 1 : 3); ++r.reruns)
      r.reproduced += clock.run(probe, best).verdict == original.verdict;
    r.flaky = r.reproduced < r.reruns;
    // Which properties matter, within what is left of the time limit. A flaky
    // failure's passing probes would prove nothing.
    if (!r.flaky && !r.stopped)
      r.notes = shrink_detail::property_notes(spec, best, original.verdict, probe, clock, r.attempts);
  } catch (const DeadlineReached&) {
    r.stopped = true;
    r.flaky = r.reproduced < r.reruns;
  }
  if (!nonzeros.empty()) r.notes.push_back(nonzeros);
  if (r.stopped) r.notes.push_back("shrinking stopped at the run's deadline: the smallest failing case found by then");
  return r;
}

std::string explain(const ShrinkResult& r) {
  std::string s = fmt::format("{} (call {}) after shrinking ({} cases run{}): {}\n", name(r.outcome.verdict),
                              r.outcome.call, r.attempts, r.flaky ? fmt::format(", FLAKY: reproduced {} of {}", r.reproduced, r.reruns) : "",
                              describe(r.shrunk));
  if (!r.outcome.stats.first_bad.empty()) {
    const BadElement& e = r.outcome.stats.first_bad.front();
    s += fmt::format("  first bad element C[{},{}]: expected {:.9g}, got {:.9g} ({:.3g} ulp)\n", e.row, e.col,
                     e.expected, e.got, e.ulps);
  } else {
    s += "  " + r.outcome.detail + "\n";
  }
  for (auto& n : r.notes) s += "  " + n + "\n";
  return s;
}

int shrink_attempts_for(Verdict v, bool isolated, int max_attempts) {
  if (v == Verdict::crash || v == Verdict::cuda_error || v == Verdict::hang)
    return isolated ? std::min(max_attempts, 80) : 0;
  return max_attempts;
}

}  // namespace assay
