#include "ops/moe_topk/moe_topk_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace assay::moe_topk {
namespace {

// An exp's error in ulps: expf within 2 (CUDA's published bound, glibc's
// is tighter); __expf within 2 + 1.173 |arg| (CUDA Programming Guide).
double exp_ulps(const Settings& s, double arg) { return s.fast_math ? 2.0 + 1.173 * std::fabs(arg) : 2.0; }
// What underflow in f32 may lose of a score or a quotient, absolutely.
constexpr double kFloor = 0x1p-126;
// DeepSeek-V3's denominator guard, as an f32 kernel holds it.
const double kEps = double(1e-20f);

// The experts in order of routing preference: higher sel first, then the lower index.
bool before(const TokenRouting& r, int64_t a, int64_t b) {
  return r.sel[size_t(a)] != r.sel[size_t(b)] ? r.sel[size_t(a)] > r.sel[size_t(b)] : a < b;
}

}  // namespace

TokenRouting route(const Settings& s, int64_t topk, std::span<const double> x, std::span<const double> bias,
                   const Precision& prec) {
  TokenRouting r;
  route(s, topk, x, bias, prec, r);
  return r;
}

void route(const Settings& s, int64_t topk, std::span<const double> x, std::span<const double> bias,
           const Precision& prec, TokenRouting& r) {
  const size_t n = x.size();
  r.undefined = false;
  r.score.assign(n, 0.0), r.rel.assign(n, 0.0), r.sel.assign(n, 0.0), r.delta.assign(n, 0.0);
  r.group.clear(), r.group_delta.clear(), r.chosen.clear();
  const bool any_nan = std::any_of(x.begin(), x.end(), [](double v) { return std::isnan(v); }) ||
                       std::any_of(bias.begin(), bias.end(), [](double v) { return !std::isfinite(v); });
  if (s.mode == Mode::softmax_topk) {
    double m = -INFINITY;
    for (double v : x)
      if (!std::isnan(v)) m = std::max(m, v);
    r.undefined = any_nan || std::isinf(m);  // +inf: inf - inf; all -inf: 0 / 0
    if (!r.undefined) {
      double sum = 0;
      for (size_t e = 0; e < n; ++e) sum += r.score[e] = std::exp(x[e] - m);
      // A: the sum's terms' own errors, weighted by their share of the sum.
      double a = 0;
      for (size_t e = 0; e < n; ++e) {
        r.score[e] /= sum;
        if (std::isfinite(x[e])) a += r.score[e] * (std::fabs(x[e] - m) + 2 * exp_ulps(s, x[e] - m));
      }
      // p_e = exp(x_e - m) / sum: the rounded difference (|x - m| u in the
      // exponent), the exp, the (n - 1)-term sum, the division and a
      // reciprocal kernels multiply by.
      for (size_t e = 0; e < n; ++e)
        if (std::isfinite(x[e])) r.rel[e] = std::fabs(x[e] - m) + 2 * exp_ulps(s, x[e] - m) + double(n) + a + 2;
    }
  } else {
    r.undefined = any_nan;
    if (!r.undefined)
      for (size_t e = 0; e < n; ++e) {
        const double v = x[e];
        r.score[e] = std::isinf(v) ? (v > 0 ? 1.0 : 0.0) : 1.0 / (1.0 + std::exp(-v));
        // 1 / (1 + exp(-x)): exp(-x)'s error reaches the sum damped by 1 - s,
        // then the sum's and the division's roundings.
        if (std::isfinite(v)) r.rel[e] = (1 - r.score[e]) * (std::fabs(v) + 2 * exp_ulps(s, v)) + 3;
      }
  }
  if (r.undefined) return;
  const double t = prec.scale * prec.u;
  for (size_t e = 0; e < n; ++e) {
    const bool biased = !bias.empty();
    r.sel[e] = r.score[e] + (biased ? bias[e] : 0.0);
    r.delta[e] = t * (r.score[e] * r.rel[e] + (biased ? std::fabs(r.sel[e]) : 0.0)) + prec.scale * kFloor;
  }
  // The reference's choice: groups by score, then experts, ties to the lower index.
  std::vector<int64_t>& allowed = r.chosen;  // built in place, cut to topk at the end
  allowed.resize(n);
  std::iota(allowed.begin(), allowed.end(), int64_t(0));
  if (s.grouped()) {
    const size_t groups = size_t(s.n_group), size = n / groups;
    r.group.assign(groups, 0.0), r.group_delta.assign(groups, 0.0);
    for (size_t g = 0; g < groups; ++g) {
      // The group's two best sel and two largest bounds, in one pass.
      int64_t best[2] = {-1, -1};
      double d[2] = {0, 0};
      for (int64_t e = int64_t(g * size); e < int64_t((g + 1) * size); ++e) {
        if (best[0] < 0 || before(r, e, best[0])) best[1] = best[0], best[0] = e;
        else if (best[1] < 0 || before(r, e, best[1])) best[1] = e;
        const double de = r.delta[size_t(e)];
        if (de > d[0]) d[1] = d[0], d[0] = de;
        else if (de > d[1]) d[1] = de;
      }
      for (int i = 0; i < 2; ++i)
        if (best[i] >= 0) r.group[g] += r.sel[size_t(best[i])], r.group_delta[g] += d[i];
      // A top-two sum moves by at most the two largest moves of its terms, plus its rounding.
      if (best[1] >= 0) r.group_delta[g] += t * std::fabs(r.group[g]);
    }
    size_t order[1024];  // n_group <= 1024 (read_settings)
    std::iota(order, order + groups, size_t(0));
    std::stable_sort(order, order + groups, [&](size_t a, size_t b) { return r.group[a] > r.group[b]; });
    allowed.clear();
    for (size_t i = 0; i < size_t(s.topk_group); ++i)
      for (size_t e = 0; e < size; ++e) allowed.push_back(int64_t(order[i] * size + e));
  }
  const auto k = std::min<size_t>(size_t(topk), allowed.size());
  std::partial_sort(allowed.begin(), allowed.begin() + long(k), allowed.end(),
                    [&](int64_t a, int64_t b) { return before(r, a, b); });
  allowed.resize(k);
}

std::optional<std::string> judge_choice(const Settings& s, const TokenRouting& r, std::span<const int64_t> got) {
  const int64_t n = int64_t(r.sel.size());
  std::vector<char> taken(size_t(n), 0);
  for (size_t j = 0; j < got.size(); ++j) {
    const int64_t e = got[j];
    if (e < 0 || e >= n) return fmt::format("slot {} names expert {}, outside [0, {})", j, e, n);
    if (taken[size_t(e)]) return fmt::format("expert {} is taken twice", e);
    taken[size_t(e)] = 1;
  }
  double lo = INFINITY;  // the weakest expert taken, at its most favourable
  int64_t weakest = -1;
  for (int64_t e : got)
    if (r.sel[size_t(e)] + r.delta[size_t(e)] < lo) lo = r.sel[size_t(e)] + r.delta[size_t(e)], weakest = e;
  // The strongest expert left out among `experts`, at its least favourable.
  auto strongest_left = [&](auto&& in_scope) {
    std::pair<double, int64_t> best{-INFINITY, -1};
    for (int64_t e = 0; e < n; ++e)
      if (!taken[size_t(e)] && in_scope(e) && r.sel[size_t(e)] - r.delta[size_t(e)] > best.first)
        best = {r.sel[size_t(e)] - r.delta[size_t(e)], e};
    return best;
  };
  auto left_out = [&](int64_t e) {
    return fmt::format("expert {} (selection score {:.9g}) was left out for expert {} ({:.9g}), apart by more than "
                       "both bounds",
                       e, r.sel[size_t(e)], weakest, r.sel[size_t(weakest)]);
  };
  if (!s.grouped()) {
    const auto [hi, e] = strongest_left([](int64_t) { return true; });
    if (hi > lo) return left_out(e);
  } else {
    const size_t groups = size_t(s.n_group), size = size_t(n) / groups, keep = size_t(s.topk_group);
    std::vector<char> need(groups, 0);
    for (int64_t e : got) need[size_t(e) / size] = 1;
    if (size_t(std::count(need.begin(), need.end(), 1)) > keep)
      return fmt::format("the experts taken span {} groups; topk_group is {}", std::count(need.begin(), need.end(), 1),
                         keep);
    // out[g]: the strongest expert of group g left out, at its least favourable.
    std::vector<double> out(groups, -INFINITY);
    for (int64_t e = 0; e < n; ++e)
      if (!taken[size_t(e)]) out[size_t(e) / size] = std::max(out[size_t(e) / size], r.sel[size_t(e)] - r.delta[size_t(e)]);
    // An accepted group choice G: min over G of (score + bound) >= max over
    // the rest of (score - bound). Every such G has its minimum t among the
    // groups' upper values; for each t the groups that must be in are fixed,
    // and the rest are best filled with the groups whose left-out experts are weakest.
    bool groups_fit = false, accepted = false;
    for (size_t gt = 0; gt < groups && !accepted; ++gt) {
      const double t = r.group[gt] + r.group_delta[gt];
      std::vector<size_t> in, optional;
      bool ok = true;
      for (size_t g = 0; g < groups; ++g) {
        const bool must = r.group[g] - r.group_delta[g] > t, may = r.group[g] + r.group_delta[g] >= t;
        if ((must || need[g]) && !may) ok = false;
        if (must || need[g]) in.push_back(g);
        else if (may) optional.push_back(g);
      }
      if (!ok || in.size() > keep || in.size() + optional.size() < keep) continue;
      groups_fit = true;
      std::sort(optional.begin(), optional.end(), [&](size_t a, size_t b) { return out[a] < out[b]; });
      double hi = -INFINITY;
      for (size_t g : in) hi = std::max(hi, out[g]);
      for (size_t i = 0; in.size() + i < keep; ++i) hi = std::max(hi, out[optional[i]]);
      accepted = hi <= lo;
    }
    if (!accepted && !groups_fit)
      return "the experts taken lie in groups that no choice of topk_group groups within the bounds of the group "
             "scores holds";
    if (!accepted) {
      // Within the reference's own groups, name the expert that shows it.
      std::vector<char> mine(groups, 0);
      for (int64_t e : r.chosen) mine[size_t(e) / size] = 1;
      const auto [hi, e] = strongest_left([&](int64_t x) { return mine[size_t(x) / size] != 0; });
      if (hi > lo) return left_out(e);
      return "no choice of topk_group groups within the bounds holds the experts taken as the best of their groups";
    }
  }
  if (s.sorted)
    for (size_t j = 0; j + 1 < got.size(); ++j) {
      const size_t a = size_t(got[j]), b = size_t(got[j + 1]);
      if (r.sel[a] + r.delta[a] < r.sel[b] - r.delta[b])
        return fmt::format("sorted: slot {} (expert {}, selection score {:.9g}) comes before slot {} (expert {}, "
                           "{:.9g})",
                           j, a, r.sel[a], j + 1, b, r.sel[b]);
    }
  return std::nullopt;
}

void weights_of(const Settings& s, const TokenRouting& r, std::span<const int64_t> chosen, double* ref,
                double* bound) {
  double sum = 0, rel_sum = 0;
  for (int64_t e : chosen) sum += r.score[size_t(e)], rel_sum += r.score[size_t(e)] * r.rel[size_t(e)];
  const double denominator = s.renormalize ? sum + (s.mode == Mode::sigmoid_bias_grouped ? kEps : 0.0) : 1.0;
  // The denominator's error: its terms' own (weighted), then k - 1 additions.
  const double rel_den = s.renormalize ? (sum > 0 ? rel_sum / sum : 0.0) + double(chosen.size()) : 0.0;
  const double rounding = (s.renormalize ? 1.0 : 0.0) + (s.scaling != 1.0 ? 1.0 : 0.0);
  // Scores that underflow f32 (sigmoid of x below -87: exp(-x) overflows, s
  // comes back 0) lose up to 2^-126 each, in the numerator and in each of
  // the denominator's k terms; over DeepSeek-V3's 1e-20 guard that is far
  // more than a ulp of the weight. In units of u (2^-24), as bound is.
  const double underflow = s.scaling * double(chosen.size() + 1) * 0x1p-102 / denominator;
  for (size_t j = 0; j < chosen.size(); ++j) {
    const size_t e = size_t(chosen[j]);
    ref[j] = r.score[e] / denominator * s.scaling;
    bound[j] = std::fabs(ref[j]) * (r.rel[e] + rel_den + rounding) + underflow;
  }
}

}  // namespace assay::moe_topk
