// assay bench's statistics: the summary, the stopping rule and the verdict
// of a candidate against a baseline (harness/src/bench/timing_stats.h).
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "bench/timing_stats.h"
#include "case/rng.h"

using namespace assay;
using namespace assay::bench;

namespace {

// n samples around `center` with relative spread `spread` (uniform), from the counter RNG.
std::vector<double> samples(int n, double center, double spread, uint64_t seed) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) {
    const double u = double(hash3(seed, 0x7431, uint64_t(i)) >> 11) * 0x1p-53;  // [0, 1)
    v.push_back(center * (1 + spread * (2 * u - 1)));
  }
  return v;
}

}  // namespace

TEST_CASE("bench: the summary's quartiles interpolate between order statistics", "[bench]") {
  const std::vector<double> v = {5, 1, 4, 2, 3};  // sorted 1..5
  const TimeSummary s = summarize(v);
  CHECK(s.samples == 5);
  CHECK(s.min == 1);
  CHECK(s.max == 5);
  CHECK(s.median == 3);
  CHECK(s.q1 == 2);
  CHECK(s.q3 == 4);
  CHECK(s.noise() == Approx(2.0 / 3.0));
  const TimeSummary even = summarize(std::vector<double>{1, 2, 3, 4});
  CHECK(even.median == Approx(2.5));
  CHECK(even.q1 == Approx(1.75));
  CHECK(even.q3 == Approx(3.25));
  CHECK(summarize(std::vector<double>{}).samples == 0);
  // One outlier moves neither the median nor the noise much (why the IQR, not the deviation).
  std::vector<double> w = samples(101, 1e-3, 0.001, 3);
  const double before = summarize(w).noise();
  w[50] = 1.0;
  CHECK(summarize(w).noise() < 2 * before);
}

TEST_CASE("bench: the stopping rule waits for its minimums, then stops on low or stable noise", "[bench]") {
  StoppingRule rule;  // 10 samples, 0.5 s, 0.5 %
  // Quiet: 0.1 % spread, 0.1 s each. Too few samples, then enough.
  const std::vector<double> quiet = samples(40, 0.1, 0.001, 1);
  CHECK(should_stop(rule, std::span(quiet).first(4)) == StopReason::not_yet);
  CHECK(should_stop(rule, std::span(quiet).first(9)) == StopReason::not_yet);
  CHECK(should_stop(rule, std::span(quiet).first(10)) == StopReason::converged);
  // Enough samples but not enough time: 10 of 1 ms.
  const std::vector<double> short_ones = samples(10, 1e-3, 0.001, 2);
  CHECK(should_stop(rule, short_ones) == StopReason::not_yet);
  // Noisy (20 % spread) and never below 0.5 %: not before the window is
  // full, then stable (the spread is the distribution's, not the sample size's).
  const std::vector<double> noisy_slow = samples(30, 0.05, 0.2, 4);  // 20 samples: 1 s, the window not full
  CHECK(should_stop(rule, std::span(noisy_slow).first(20)) == StopReason::not_yet);
  const std::vector<double> noisy = samples(4000, 1e-3, 0.2, 5);  // 4 s
  CHECK(should_stop(rule, noisy) == StopReason::noise_stable);
  // The timeout wins over everything.
  rule.timeout_seconds = 1;
  CHECK(should_stop(rule, std::span(quiet).first(10)) == StopReason::timed_out);
  CHECK(name(StopReason::noise_stable) == "noise_stable");
}

TEST_CASE("bench: a difference is called only when the interquartile intervals are apart", "[bench]") {
  const TimeSummary base = summarize(samples(200, 1e-3, 0.02, 11));
  // The same distribution, drawn again: SAME, speedup near 1 inside its interval.
  const TimeSummary again = summarize(samples(200, 1e-3, 0.02, 12));
  SpeedComparison c = compare(again, base);
  CHECK(c.verdict == Speed::same);
  CHECK(c.speedup == Approx(1).epsilon(0.01));
  CHECK(c.low <= c.speedup);
  CHECK(c.speedup <= c.high);
  // Twice as fast, and half as fast.
  c = compare(summarize(samples(200, 0.5e-3, 0.02, 13)), base);
  CHECK(c.verdict == Speed::faster);
  CHECK(c.speedup == Approx(2).epsilon(0.02));
  CHECK(c.low > 1);
  c = compare(summarize(samples(200, 2e-3, 0.02, 14)), base);
  CHECK(c.verdict == Speed::slower);
  CHECK(c.high < 1);
  // 1 % faster inside 2 % noise: not a difference.
  c = compare(summarize(samples(200, 0.99e-3, 0.02, 15)), base);
  CHECK(c.verdict == Speed::same);
  CHECK(name(Speed::faster) == "FASTER");
}

TEST_CASE("bench: the geometric mean of speedups", "[bench]") {
  CHECK(geometric_mean(std::vector<double>{2, 0.5}) == Approx(1));
  CHECK(geometric_mean(std::vector<double>{2, 8}) == Approx(4));
  CHECK(geometric_mean(std::vector<double>{}) == 1);
}
