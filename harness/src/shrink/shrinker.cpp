#include "shrink/shrinker.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "shrink/nonzeros.h"
#include "shrink/trials.h"

namespace assay {
namespace {

using shrink_detail::with_dims;

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
  shrink_detail::Trials s(spec, probe, original.verdict, max_attempts, max_seconds);
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
  // Past the time limit (a huge case takes seconds), once, and no notes.
  const bool late = s.out_of_time();
  r.stopped = s.stopped();
  try {  // a probe stopped at the run's deadline ends the re-runs and notes, keeping the shrunk case
    for (r.reruns = 0; !r.stopped && r.reruns < (late ? 1 : 3); ++r.reruns)
      r.reproduced += probe(best).verdict == original.verdict;
    // Which properties matter: the neighbours of each dimension that pass.
    for (int dim = 0; dim < 3 && !late && !r.stopped; ++dim) {
      const char* name = dim == 0 ? "m" : dim == 1 ? "n" : "k";
      int64_t d = dim == 0 ? best.m : dim == 1 ? best.n : best.k;
      std::vector<std::string> passes;
      for (int64_t v : {d - 1, d + 1, (d / 64 + 1) * 64}) {
        if (v < 1 || v == d) continue;  // an empty problem passes trivially: not telling
        Case x = with_dims(best, dim == 0 ? v : best.m, dim == 1 ? v : best.n, dim == 2 ? v : best.k, true);
        if (!shrink_detail::inside_spec(spec, x)) continue;
        CaseOutcome o = probe(x);
        ++r.attempts;
        if (o.verdict == Verdict::pass) passes.push_back(fmt::format("{} = {}", name, v));
      }
      if (!passes.empty())
        r.notes.push_back(fmt::format("fails at {} = {}; passes for {}", name, d, fmt::join(passes, ", ")));
    }
  } catch (const DeadlineReached&) {
    r.stopped = true;
  }
  r.flaky = r.reproduced < r.reruns;
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
  if (v == Verdict::hang) return 0;
  if (v == Verdict::crash || v == Verdict::cuda_error) return isolated ? std::min(max_attempts, 80) : 0;
  return max_attempts;
}

}  // namespace assay
