#include "shrink/shrinker.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "shrink/nonzeros.h"
#include "shrink/properties.h"
#include "shrink/trials.h"

namespace assay {
namespace {

// The share of the time limit the steps leave to the re-runs and property
// probes, so that a slow failure (a crash's fresh worker, a hang's timeout)
// still gets its explanation.
constexpr double kAfterShare = 0.25;

// Smaller values worth trying for a size, most desirable first.
std::vector<int64_t> smaller(int64_t d) {
  std::vector<int64_t> v = {0, 1, 2, 3};
  for (int64_t t : {8, 16, 32, 64, 128, 256}) v.insert(v.end(), {t - 1, t, t + 1});
  for (int64_t step = d / 2; step >= 1; step /= 2) v.push_back(d - step);  // binary search from below
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  v.erase(std::remove_if(v.begin(), v.end(), [d](int64_t x) { return x >= d; }), v.end());
  return v;
}

// Whether x lays out some tensor otherwise than c does (strides or offset):
// a layout simplification, not a scalar one.
bool moves_layout(const Case& c, const Case& x) {
  if (x.tensors.size() != c.tensors.size()) return true;
  for (size_t i = 0; i < c.tensors.size(); ++i)
    if (x.tensors[i].strides != c.tensors[i].strides || x.tensors[i].offset != c.tensors[i].offset) return true;
  return false;
}

std::vector<int64_t> sizes_of(const Case& c) {
  std::vector<int64_t> v;
  v.reserve(c.sizes.size());
  for (const auto& s : c.sizes) v.push_back(s.value);
  return v;
}

}  // namespace

ShrinkResult shrink(const Op& op, const Spec& spec, const Case& failing, const CaseOutcome& original,
                    const CaseProbe& probe, int max_attempts, double max_seconds) {
  shrink_detail::Trials s(op, spec, probe, failing, original.verdict, max_attempts, max_seconds,
                          kAfterShare * std::min(max_seconds, 1e9), original.seconds);
  Case best = failing;
  CaseOutcome best_outcome = original;
  auto take = [&](const Case& c) {
    if (!s.still_fails(c)) return false;
    best = c, best_outcome = s.last();
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    // The op's simplifications, most simplifying first. Layouts: the first
    // (typically all tensors plain); when it does not fail, the following
    // ones one at a time until one does.
    {
      std::vector<Case> layouts;
      for (Case& x : op.simplifications(best))
        if (moves_layout(best, x)) layouts.push_back(std::move(x));
      for (size_t i = 0; i < layouts.size() && !progress; ++i) progress |= take(layouts[i]);
    }
    // The rest (scalars), each one tried, from the case the layouts left.
    {
      const Case from = best;
      for (const Case& x : op.simplifications(from))
        if (!moves_layout(from, x) && take(x)) progress = true;
    }
    // Values: small exact integers are the easiest to read.
    if (best.recipe != Recipe::ints) {
      Case x = best;
      x.recipe = Recipe::ints;
      progress |= take(x);
    }
    // Sizes, one at a time in the case's order, smallest candidate first.
    for (size_t i = 0; i < best.sizes.size(); ++i) {
      for (int64_t v : smaller(best.sizes[i].value)) {
        std::vector<int64_t> sizes = sizes_of(best);
        sizes[i] = v;
        if (take(op.resize(best, sizes, /*keep_layout=*/true))) {
          progress = true;
          break;
        }
      }
    }
  }
  // Last, the values: the fewest input elements that must be nonzero.
  // (Not once the attempts are spent: listing a huge tensor's positions alone takes seconds.)
  std::string nonzeros = s.exhausted() ? std::string() : shrink_detail::cut_nonzeros(op, best, take);
  ShrinkResult r;
  r.shrunk = best, r.outcome = best_outcome, r.attempts = s.attempts();
  // Re-run three times: a failure that does not always come back is flaky.
  // When the steps ran out of time (a huge case takes seconds), once.
  shrink_detail::RunClock& clock = s.clock();
  const bool late = s.out_of_time();
  r.stopped = s.stopped();
  try {  // a probe stopped at the run's deadline ends the re-runs and notes, keeping the shrunk case
    // Like every run here, a re-run starts only when it can end within the limit.
    for (r.reruns = 0; !r.stopped && r.reruns < (late ? 1 : 3) && !clock.out_of_time(); ++r.reruns)
      r.reproduced += clock.run(probe, best).verdict == original.verdict;
    r.flaky = r.reproduced < r.reruns;
    // Which properties matter, within what is left of the time limit. A flaky
    // failure's passing probes would prove nothing.
    if (!r.flaky && !r.stopped)
      r.notes = shrink_detail::property_notes(op, spec, best, original.verdict, probe, clock, r.attempts);
  } catch (const DeadlineReached&) {
    r.stopped = true;
    r.flaky = r.reproduced < r.reruns;
  }
  if (!nonzeros.empty()) r.notes.push_back(nonzeros);
  if (r.reruns == 0 && !r.stopped) r.notes.push_back("not re-run: no time was left for another run of a case this size");
  if (r.stopped) r.notes.push_back("shrinking stopped at the run's deadline: the smallest failing case found by then");
  return r;
}

std::string explain(const ShrinkResult& r) {
  std::string s = fmt::format("{} (call {}) after shrinking ({} cases run{}): {}\n", name(r.outcome.verdict),
                              r.outcome.call, r.attempts, r.flaky ? fmt::format(", FLAKY: reproduced {} of {}", r.reproduced, r.reruns) : "",
                              describe(r.shrunk));
  if (!r.outcome.stats.first_bad.empty()) {
    const BadElement& e = r.outcome.stats.first_bad.front();
    const std::string tensor = e.tensor >= 0 && size_t(e.tensor) < r.shrunk.tensors.size()
                                   ? r.shrunk.tensors[size_t(e.tensor)].name
                                   : fmt::format("tensor {}", e.tensor);
    s += fmt::format("  first bad element {}[{},{}]: expected {:.9g}, got {:.9g} ({:.3g} ulp)\n", tensor, e.row,
                     e.col, e.expected, e.got, e.ulps);
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
