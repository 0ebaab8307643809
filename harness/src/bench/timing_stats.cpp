#include "bench/timing_stats.h"

#include <algorithm>
#include <cmath>

namespace assay::bench {
namespace {

// The p-quantile of sorted values, interpolated at rank (n - 1) p.
double quantile(const std::vector<double>& sorted, double p) {
  const double rank = p * double(sorted.size() - 1);
  const size_t lo = size_t(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - double(lo));
}

}  // namespace

TimeSummary summarize(std::span<const double> seconds) {
  TimeSummary s;
  s.samples = int64_t(seconds.size());
  if (seconds.empty()) return s;
  std::vector<double> v(seconds.begin(), seconds.end());
  std::sort(v.begin(), v.end());
  s.min = v.front(), s.max = v.back();
  s.q1 = quantile(v, 0.25), s.median = quantile(v, 0.5), s.q3 = quantile(v, 0.75);
  return s;
}

std::string_view name(StopReason r) {
  switch (r) {
    case StopReason::not_yet: return "not_yet";
    case StopReason::converged: return "converged";
    case StopReason::noise_stable: return "noise_stable";
    case StopReason::timed_out: return "timed_out";
  }
  return "?";
}

StopReason should_stop(const StoppingRule& rule, std::span<const double> seconds) {
  double total = 0;
  for (double x : seconds) total += x;
  if (total >= rule.timeout_seconds) return StopReason::timed_out;
  const int64_t n = int64_t(seconds.size());
  if (n < rule.min_samples || total < rule.min_seconds) return StopReason::not_yet;
  if (summarize(seconds).noise() <= rule.max_noise) return StopReason::converged;
  // Stable noise: the noise of the prefixes at five points over the last
  // `window` samples, spread within stable_spread of their mean (more
  // samples no longer sharpen it). Five sorts a call.
  if (n < rule.min_samples + rule.window) return StopReason::not_yet;
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int q = 0; q <= 4; ++q) {
    const int64_t k = n - rule.window * (4 - q) / 4;
    const double noise = summarize(seconds.first(size_t(k))).noise();
    lo = std::min(lo, noise), hi = std::max(hi, noise), sum += noise;
  }
  const double mean = sum / 5;
  return hi - lo <= rule.stable_spread * mean ? StopReason::noise_stable : StopReason::not_yet;
}

std::string_view name(Speed s) {
  switch (s) {
    case Speed::faster: return "FASTER";
    case Speed::slower: return "SLOWER";
    case Speed::same: return "SAME";
  }
  return "?";
}

SpeedComparison compare(const TimeSummary& candidate, const TimeSummary& baseline) {
  SpeedComparison c;
  if (candidate.median <= 0 || baseline.median <= 0) return c;
  c.speedup = baseline.median / candidate.median;
  c.low = candidate.q3 > 0 ? baseline.q1 / candidate.q3 : c.speedup;
  c.high = candidate.q1 > 0 ? baseline.q3 / candidate.q1 : c.speedup;
  if (candidate.q3 < baseline.q1) c.verdict = Speed::faster;
  else if (candidate.q1 > baseline.q3) c.verdict = Speed::slower;
  return c;
}

double geometric_mean(std::span<const double> ratios) {
  if (ratios.empty()) return 1;
  double log_sum = 0;
  for (double r : ratios) log_sum += std::log(r);
  return std::exp(log_sum / double(ratios.size()));
}

}  // namespace assay::bench
