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

// Orientation, padding and offset of a tensor's innermost two dimensions.
int layout_class(const TensorGeom& g) {
  const bool col = g.row_stride() == 1 && g.col_stride() != 1;
  const bool padded = col ? g.col_stride() > std::max<int64_t>(g.dim_rows(), 1)
                          : g.row_stride() > std::max<int64_t>(g.cols(), 1) && g.ndim >= 2;
  return int(col) | int(padded) << 1 | int(g.offset != 0) << 2;
}

double elements(const Case& c) {
  double n = 0;
  for (size_t i = 0; i < c.tensors.size(); ++i) n += double(c.geom(int(i)).count());
  return n;
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

void record_features(const Op& op, const Case& c, const CaseOutcome& o) {
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
  if (op.work(c) > max_feature_work || elements(c) > max_feature_elements) return;
  std::vector<int64_t> dims;
  for (auto& z : c.sizes) dims.push_back(z.value);
  for (int64_t d : dims)
    for (int64_t mod : kMods) light(size_t(tail_class(d, mod)), 3);
  for (int64_t d : dims) light(size_t(std::min<int64_t>(d, 15)), 16);  // tiny sizes, one by one
  // Size classes: each size's log2 magnitude, and each size's tail class at
  // another's (or its own) magnitude, so a campaign is rewarded for each step
  // that grows one size while another sits in a remainder class (a remainder
  // tile at long k, say).
  for (int64_t d : dims) light(magnitude(d), kMagnitudes);
  for (int64_t di : dims)
    for (int64_t dj : dims)
      for (int64_t mod : kMods) light(size_t(tail_class(di, mod)) * kMagnitudes + magnitude(dj), 3 * kMagnitudes);
  for (size_t i = 0; i < c.tensors.size(); ++i) light(size_t(layout_class(c.geom(int(i)))), 8);
  light(size_t(c.recipe), 4);
  size_t zeros = 0;  // which scalars are 0 (GEMM's alpha and beta: BLAS skips)
  for (size_t i = 0; i < c.scalars.size() && i < 4; ++i) zeros |= size_t(c.scalars[i].value == 0) << i;
  light(zeros, 16);
  light(size_t(log2_bucket(o.stats.max_ratio)), 64);  // how close the error came to the tolerance
  light(size_t(log2_bucket(o.stats.max_ulps)), 64);
}

std::string failure_signature(const Case& c, Verdict v) {
  std::string s(name(v));
  for (auto& z : c.sizes) s += fmt::format(" {}{}", z.name, tail_class(z.value, 64));
  for (size_t i = 0; i < c.tensors.size(); ++i) s += fmt::format(" {}{}", c.tensors[i].name, layout_class(c.geom(int(i))));
  return s;
}

}  // namespace assay::fuzz
