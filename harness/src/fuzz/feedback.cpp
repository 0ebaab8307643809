#include "fuzz/feedback.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include <fmt/format.h>

namespace assay::fuzz {
namespace {

// libFuzzer finds this array through the section's start and stop symbols.
constexpr size_t kCounters = 8192;
__attribute__((section("__libfuzzer_extra_counters"), used)) uint8_t counters[kCounters];
bool enabled = true;
double max_feature_work = 1e300, max_feature_elements = 1e300;
constexpr int64_t kMods[] = {8, 16, 32, 64, 128};
constexpr size_t kMagnitudes = 26;  // bit_width of a dimension: 0 for 0, 1 for 1, ..., 25 below 2^25

// Below, at or above a multiple of `mod`: the tail classes of tiled kernels.
int tail_class(int64_t d, int64_t mod) {
  int64_t r = d % mod;
  return r == 0 ? 0 : r < mod / 2 ? 1 : 2;
}

// log2 magnitude: the size regimes of a kernel (k loops split or staged past
// some length, grids past some count, offsets past some width).
size_t magnitude(int64_t d) {
  return std::min<size_t>(size_t(std::bit_width(uint64_t(std::max<int64_t>(d, 0)))), kMagnitudes - 1);
}

int layout_class(const Layout& l, int64_t rows, int64_t cols) {
  bool col = l.row_stride == 1 && l.col_stride != 1;
  bool padded = col ? l.col_stride > std::max<int64_t>(rows, 1) : l.row_stride > std::max<int64_t>(cols, 1);
  return int(col) | int(padded) << 1 | int(l.offset != 0) << 2;
}

int log2_bucket(double x) {
  if (!(x > 0)) return 0;
  if (std::isinf(x)) return 63;
  return std::clamp(int(std::log2(x)) + 32, 1, 62);
}

}  // namespace

void enable_features(bool on, const CodecLimits& lim) {
  enabled = on;
  max_feature_work = lim.max_work / 8, max_feature_elements = lim.max_elements / 8;
}

void record_features(const Case& c, const CaseOutcome& o) {
  if (!enabled) {
    // One constant feature: libFuzzer ends a campaign that finds none at all,
    // so the unguided baseline still gets its time, mutating blindly.
    counters[0] = 1;
    return;
  }
  size_t slot = 0;
  auto light = [&](size_t index, size_t span) {
    counters[(slot + index) % kCounters] = 1;
    slot += span;
  };
  light(size_t(o.verdict), 16);
  // Cost-aware: a case past the feature limits earns nothing for its shape or
  // error (the same class reached cheaply does), only a new verdict, so the
  // feedback keeps the cheap case of each class and does not drag the
  // campaign to slow ones.
  const double m = double(c.m), n = double(c.n), k = double(c.k);
  if (m * n * k > max_feature_work || m * k + k * n + m * n > max_feature_elements) return;
  const int64_t dims[3] = {c.m, c.n, c.k};
  for (int64_t d : dims)
    for (int64_t mod : kMods) light(size_t(tail_class(d, mod)), 3);
  for (int64_t d : dims) light(size_t(std::min<int64_t>(d, 15)), 16);  // tiny sizes, one by one
  // Size classes: each dimension's log2 magnitude, and each dimension's tail
  // class at another's (or its own) magnitude, so a campaign is rewarded for
  // each step that grows one dimension while another sits in a remainder
  // class (a remainder tile at long k, say).
  for (int64_t d : dims) light(magnitude(d), kMagnitudes);
  for (int64_t di : dims)
    for (int64_t dj : dims)
      for (int64_t mod : kMods) light(size_t(tail_class(di, mod)) * kMagnitudes + magnitude(dj), 3 * kMagnitudes);
  light(size_t(layout_class(c.a, c.m, c.k)), 8);
  light(size_t(layout_class(c.b, c.k, c.n)), 8);
  light(size_t(layout_class(c.c, c.m, c.n)), 8);
  light(size_t(c.recipe), 4);
  light(size_t(c.alpha == 0) | size_t(c.beta == 0) << 1, 4);
  light(size_t(log2_bucket(o.stats.max_ratio)), 64);  // how close the error came to the tolerance
  light(size_t(log2_bucket(o.stats.max_ulps)), 64);
}

std::string failure_signature(const Case& c, Verdict v) {
  return fmt::format("{} m{} n{} k{} A{} B{} C{}", name(v), tail_class(c.m, 64), tail_class(c.n, 64),
                     tail_class(c.k, 64), layout_class(c.a, c.m, c.k), layout_class(c.b, c.k, c.n),
                     layout_class(c.c, c.m, c.n));
}

}  // namespace assay::fuzz
