#include "fuzz/feedback.h"

#include <cmath>

#include <fmt/format.h>

namespace assay::fuzz {
namespace {

// libFuzzer finds this array through the section's start and stop symbols.
constexpr size_t kCounters = 1024;
__attribute__((section("__libfuzzer_extra_counters"), used)) uint8_t counters[kCounters];
bool enabled = true;

// Below, at or above a multiple of `mod`: the tail classes of tiled kernels.
int tail_class(int64_t d, int64_t mod) {
  int64_t r = d % mod;
  return r == 0 ? 0 : r < mod / 2 ? 1 : 2;
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

void enable_features(bool on) { enabled = on; }

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
  const int64_t dims[3] = {c.m, c.n, c.k};
  for (int64_t d : dims)
    for (int64_t mod : {8, 16, 32, 64, 128}) light(size_t(tail_class(d, mod)), 3);
  for (int64_t d : dims) light(size_t(std::min<int64_t>(d, 15)), 16);  // tiny sizes, one by one
  light(size_t(layout_class(c.a, c.m, c.k)), 8);
  light(size_t(layout_class(c.b, c.k, c.n)), 8);
  light(size_t(layout_class(c.c, c.m, c.n)), 8);
  light(size_t(c.recipe), 4);
  light(size_t(c.alpha == 0) | size_t(c.beta == 0) << 1, 4);
  light(size_t(o.verdict), 16);
  light(size_t(log2_bucket(o.stats.max_ratio)), 64);  // how close the error came to the tolerance
  light(size_t(log2_bucket(o.stats.max_ulps)), 64);
}

std::string failure_signature(const Case& c, Verdict v) {
  return fmt::format("{} m{} n{} k{} A{} B{} C{}", name(v), tail_class(c.m, 64), tail_class(c.n, 64),
                     tail_class(c.k, 64), layout_class(c.a, c.m, c.k), layout_class(c.b, c.k, c.n),
                     layout_class(c.c, c.m, c.n));
}

}  // namespace assay::fuzz
