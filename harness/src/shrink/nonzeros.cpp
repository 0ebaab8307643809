#include "shrink/nonzeros.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace assay::shrink_detail {
namespace {

struct Item {
  int tensor;
  uint64_t pos;  // keep_position(row, col)
};

// Tensor t's elements in its matrix view (core/tensor_geom.h).
int64_t elements(const Case& c, int t) { return c.geom(t).count(); }

// The positions of tensor t that `k` keeps, up to `cap` + 1 of them.
std::vector<uint64_t> kept_positions(const Case& c, int t, const Keep& k, size_t cap) {
  std::vector<uint64_t> out;
  const TensorGeom g = c.geom(t);
  const int64_t rows = g.rows(), cols = g.cols();
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
  std::vector<std::vector<uint64_t>> at(base.tensors.size());
  for (auto& it : items) at[size_t(it.tensor)].push_back(it.pos);
  for (size_t t = 0; t < base.tensors.size(); ++t)
    if (is_listed[t]) x.tensors[t].keep = listed(at[t]);
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

std::string cut_nonzeros(const Op& op, const Case& start, const std::function<bool(const Case&)>& take) {
  Case cur = start;
  auto try_case = [&](const Case& x) { return take(x) ? (cur = x, true) : false; };
  // The tensors whose values the kernel reads: an output only through its initial value.
  std::vector<int> inputs;
  for (int t = 0; t < int(start.tensors.size()); ++t)
    if (start.tensors[size_t(t)].role == Role::input || op.reads_initial(start, t)) inputs.push_back(t);
  auto keep = [](Case& c, int t) -> Keep& { return c.tensors[size_t(t)].keep; };
  // 1. Per tensor: nothing at all, else narrow a hash interval while it still
  //    fails, until few enough positions remain to list them.
  for (int t : inputs) {
    if (elements(cur, t) == 0) continue;  // nothing to cut
    Case none = cur;
    keep(none, t) = listed({});
    if (try_case(none)) continue;
    // Bisect the hash interval: each half, then the middle half. The hash
    // orders positions at random, so a few that matter often share a half.
    while (keep(cur, t).listed < 0) {
      auto at = kept_positions(cur, t, keep(cur, t), Keep::kMaxListed);
      if (at.size() <= size_t(Keep::kMaxListed)) {
        keep(cur, t) = listed(at);  // the same elements, now as a list: no run needed
        break;
      }
      const double lo = keep(cur, t).lo, hi = keep(cur, t).hi, w = hi - lo;
      bool cut = false;
      for (auto [l, h] : {std::pair{lo, lo + w / 2}, {lo + w / 2, hi}, {lo + w / 4, hi - w / 4}}) {
        Case x = cur;
        keep(x, t).lo = l, keep(x, t).hi = h;
        if ((cut = try_case(x))) break;
      }
      if (!cut) break;
    }
  }
  // 2. ddmin over every listed position of every input tensor together.
  std::vector<bool> is_listed(cur.tensors.size(), false);
  std::vector<Item> items;
  for (int t : inputs) {
    if (keep(cur, t).listed < 0) continue;
    is_listed[size_t(t)] = true;
    for (int i = 0; i < keep(cur, t).listed; ++i) items.push_back({t, keep(cur, t).at[i]});
  }
  const Case base = cur;
  ddmin(items, [&](const std::vector<Item>& s) { return try_case(with_items(base, is_listed, s)); });
  // The note: what is left, per input tensor.
  std::vector<std::string> parts;
  bool cut = false;
  for (int t : inputs) {
    const int64_t count = elements(cur, t);
    if (count == 0) continue;
    const CaseTensor& ct = cur.tensors[size_t(t)];
    const std::string name = ct.role == Role::input ? ct.name : ct.name + "0";  // an initial value
    cut |= !ct.keep.all();
    int64_t n = ct.keep.listed >= 0 ? ct.keep.listed : int64_t(kept_positions(cur, t, ct.keep, SIZE_MAX).size());
    std::string what = parts.empty() ? (n == 1 ? " nonzero" : " nonzeros") : "";
    parts.push_back(fmt::format("{}{} in {}{}", n, what, name,
                                ct.keep.listed >= 0 ? "" : fmt::format(" (of {}, hash interval)", count)));
  }
  if (!cut) return "";
  return fmt::format("{} suffice (every other input element is 0)", fmt::join(parts, ", "));
}

}  // namespace assay::shrink_detail
