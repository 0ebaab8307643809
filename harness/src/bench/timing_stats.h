// The statistics of `assay bench` (issue #16, docs/bench.md): a summary of
// one shape's timed samples, the rule that says when enough were taken, and
// the verdict of a candidate against a baseline. Pure functions of the
// samples, so the rules are tested without a GPU.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace assay::bench {

// Robust summary of one shape's samples (seconds): quartiles by linear
// interpolation between order statistics (rank (n - 1) p, as NumPy's
// default), the relative interquartile range as the noise, as NVBench
// reports it since its robust statistics ((Q3 - Q1) / median).
struct TimeSummary {
  int64_t samples = 0;
  double min = 0, q1 = 0, median = 0, q3 = 0, max = 0;
  double noise() const { return median > 0 ? (q3 - q1) / median : 0; }
};
TimeSummary summarize(std::span<const double> seconds);

// When a shape has been timed enough: at least `min_samples` samples and
// `min_seconds` of timed work, then either the noise is below `max_noise`
// or it has stopped improving (the noise of the prefixes at five points
// over the last `window` samples varies by less than `stable_spread` of
// their mean), or
// `timeout_seconds` of timed work have passed. NVBench's defaults for its
// relative-noise criterion: 10 samples, 0.5 s, 0.5 %.
struct StoppingRule {
  int64_t min_samples = 10;
  double min_seconds = 0.5;
  double max_noise = 0.005;
  int64_t window = 32;
  double stable_spread = 0.05;
  double timeout_seconds = 15;
};
enum class StopReason { not_yet, converged, noise_stable, timed_out };
std::string_view name(StopReason r);
// `seconds`: the samples so far, in the order taken. A few sorts of them a
// call: call it after each batch of samples, not after each sample.
StopReason should_stop(const StoppingRule& rule, std::span<const double> seconds);

// A candidate against a baseline on one shape. speedup = baseline median /
// candidate median, its interval from the quartiles (baseline Q1 / candidate
// Q3 to baseline Q3 / candidate Q1). A difference is called only when the
// two interquartile intervals do not overlap; otherwise the verdict is same.
enum class Speed { faster, slower, same };
std::string_view name(Speed s);
struct SpeedComparison {
  Speed verdict = Speed::same;
  double speedup = 1, low = 1, high = 1;
};
SpeedComparison compare(const TimeSummary& candidate, const TimeSummary& baseline);

// The geometric mean of positive ratios (speedups over shapes); 1 for none.
double geometric_mean(std::span<const double> ratios);

}  // namespace assay::bench
