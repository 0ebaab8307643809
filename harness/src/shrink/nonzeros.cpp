#include "shrink/nonzeros.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/gemm/gemm_problem.h"

namespace assay::shrink_detail {
namespace {

struct Item {
  int tensor;
  uint64_t pos;  // keep_position(row, col)
};

std::array<int64_t, 2> shape(const Case& c, int t) {
  return t == 0 ? std::array<int64_t, 2>{c.m, c.k} : t == 1 ? std::array<int64_t, 2>{c.k, c.n} : std::array{c.m, c.n};
}

// The positions of tensor t that `k` keeps, up to `cap` + 1 of them.
std::vector<uint64_t> kept_positions(const Case& c, int t, const Keep& k, size_t cap) {
  std::vector<uint64_t> out;
  auto [rows, cols] = shape(c, t);
  for (int64_t r = 0; r < rows && out.size() <= cap; ++r)
    for (int64_t col = 0; col < cols && out.size() <= cap; ++col)
      if (keeps(k, uint32_t(t), uint64_t(r), uint64_t(col))) out.push_back(keep_position(r, col));
  return out;
}

Keep listed(const std::vector<uint64_t>& at) {
  Keep k;
  k.listed = int32_t(at.size());
  for (size_t i = 0; i < at.size(); ++i) k.at[i] = at[i];
  return k;
}

// The case keeping exactly `items` in the listed tensors.
Case with_items(const Case& base, const std::vector<bool>& is_listed, const std::vector<Item>& items) {
  Case x = base;
  std::vector<uint64_t> at[3];
  for (auto& it : items) at[it.tensor].push_back(it.pos);
  for (int t = 0; t < 3; ++t)
    if (is_listed[t]) x.keep[t] = listed(at[t]);
  return x;
}

// Zeller's ddmin: the smallest subset (1-minimal) of `set` that still fails.
std::vector<Item> ddmin(std::vector<Item> set, const std::function<bool(const std::vector<Item>&)>& fails) {
  if (fails({})) return {};
  size_t n = 2;
  while (set.size() >= 2) {
    n = std::min(n, set.size());
    std::vector<std::vector<Item>> chunks(n), rests(n);
    for (size_t i = 0; i < set.size(); ++i)
      for (size_t c = 0; c < n; ++c) (c == i * n / set.size() ? chunks[c] : rests[c]).push_back(set[i]);
    bool reduced = false;
    for (size_t c = 0; c < n && !reduced; ++c)
      if (fails(chunks[c])) set = chunks[c], n = 2, reduced = true;
    for (size_t c = 0; c < n && !reduced && n > 2; ++c)
      if (fails(rests[c])) set = rests[c], n = n - 1, reduced = true;
    if (!reduced) {
      if (n >= set.size()) break;
      n = std::min(set.size(), 2 * n);
    }
  }
  return set;
}

}  // namespace

std::string cut_nonzeros(const Case& start, const std::function<bool(const Case&)>& take) {
  Case cur = start;
  auto try_case = [&](const Case& x) { return take(x) ? (cur = x, true) : false; };
  const int inputs = gemm::reads_c0(start) ? 3 : 2;  // C is an input only through beta * C0
  // 1. Per tensor: nothing at all, else narrow a hash interval while it still
  //    fails, until few enough positions remain to list them.
  for (int t = 0; t < inputs; ++t) {
    if (shape(cur, t)[0] * shape(cur, t)[1] == 0) continue;  // nothing to cut
    Case none = cur;
    none.keep[t] = listed({});
    if (try_case(none)) continue;
    // Bisect the hash interval: each half, then the middle half. The hash
    // orders positions at random, so a few that matter often share a half.
    while (cur.keep[t].listed < 0) {
      auto at = kept_positions(cur, t, cur.keep[t], Keep::kMaxListed);
      if (at.size() <= size_t(Keep::kMaxListed)) {
        cur.keep[t] = listed(at);  // the same elements, now as a list: no run needed
        break;
      }
      const double lo = cur.keep[t].lo, hi = cur.keep[t].hi, w = hi - lo;
      bool cut = false;
      for (auto [l, h] : {std::pair{lo, lo + w / 2}, {lo + w / 2, hi}, {lo + w / 4, hi - w / 4}}) {
        Case x = cur;
        x.keep[t].lo = l, x.keep[t].hi = h;
        if ((cut = try_case(x))) break;
      }
      if (!cut) break;
    }
  }
  // 2. ddmin over every listed position of every input tensor together.
  std::vector<bool> is_listed(3, false);
  std::vector<Item> items;
  for (int t = 0; t < inputs; ++t) {
    if (cur.keep[t].listed < 0) continue;
    is_listed[t] = true;
    for (int i = 0; i < cur.keep[t].listed; ++i) items.push_back({t, cur.keep[t].at[i]});
  }
  const Case base = cur;
  ddmin(items, [&](const std::vector<Item>& s) { return try_case(with_items(base, is_listed, s)); });
  // The note: what is left, per input tensor.
  std::vector<std::string> parts;
  bool cut = false;
  for (int t = 0; t < inputs; ++t) {
    auto [rows, cols] = shape(cur, t);
    if (rows * cols == 0) continue;
    const char* name = t == 0 ? "A" : t == 1 ? "B" : "C0";
    cut |= !cur.keep[t].all();
    int64_t n = cur.keep[t].listed >= 0 ? cur.keep[t].listed
                                        : int64_t(kept_positions(cur, t, cur.keep[t], SIZE_MAX).size());
    std::string what = parts.empty() ? (n == 1 ? " nonzero" : " nonzeros") : "";
    parts.push_back(fmt::format("{}{} in {}{}", n, what, name,
                                cur.keep[t].listed >= 0 ? "" : fmt::format(" (of {}, hash interval)", rows * cols)));
  }
  if (!cut) return "";
  return fmt::format("{} suffice (every other input element is 0)", fmt::join(parts, ", "));
}

}  // namespace assay::shrink_detail
