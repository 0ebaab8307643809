#include "ops/moe_topk/moe_topk_fuzz.h"

#include <algorithm>
#include <cstring>

#include "case/rng.h"
#include "ops/moe_topk/moe_topk_sweep.h"

namespace assay::moe_topk {
namespace {

constexpr size_t kBaseBytes = 2 + 2 + 1 + 4 + 1 + 8;
constexpr int64_t kMaxExperts = 512;
constexpr int64_t kMaxHugeTokens = (int64_t(1) << 24) - 1;

uint8_t layout_byte(const rows::Layout& l) {
  return uint8_t(uint8_t(l.col_major) | (std::clamp<int64_t>(l.pad, 0, 15) << 1) |
                 (std::clamp<int64_t>(l.offset, 0, 3) << 5));
}
rows::Layout layout_from(uint8_t b, bool may_transpose) {
  return rows::Layout{may_transpose && (b & 1), (b >> 1) & 15, (b >> 5) & 3, 0, false};
}
double work_of(const Sizes& z) { return double(z.tokens) * double(z.experts) * double(z.topk + 1); }
bool huge_allowed(const CodecLimits& lim) { return lim.huge.backend == BackendKind::cuda && lim.max_huge_work > 0; }

// The sizes made routable and within the limits: experts a multiple of
// n_group, topk within the kept groups, the logits within max_elements.
Sizes bounded(Sizes z, const Settings& s, const CodecLimits& lim, bool huge) {
  z.experts = std::clamp<int64_t>(z.experts, 1, kMaxExperts);
  if (s.grouped()) z.experts = std::max<int64_t>(s.n_group, z.experts / s.n_group * s.n_group);
  int64_t most = z.experts;
  if (s.grouped()) most = std::min(most, int64_t(s.topk_group) * (z.experts / s.n_group));
  z.topk = std::clamp<int64_t>(z.topk, 1, most);
  z.tokens = std::clamp<int64_t>(z.tokens, 0, huge ? kMaxHugeTokens : lim.max_dim - 1);
  while (z.tokens > 0 && (double(z.tokens) * double(z.experts) > (huge ? lim.max_huge_work : lim.max_elements) ||
                          work_of(z) > (huge ? lim.max_huge_work : lim.max_work)))
    z.tokens /= 2;
  return z;
}

}  // namespace

Case decode(const uint8_t* data, size_t size, const Spec& spec, const Settings& s, const CodecLimits& lim) {
  uint8_t b[kBaseBytes + 3] = {};
  std::memcpy(b, data, std::min(size, sizeof b));
  Sizes z;
  z.tokens = int64_t(b[0] | (b[1] << 8));
  z.experts = 1 + int64_t(b[2] | (b[3] << 8)) % kMaxExperts;
  z.topk = 1 + b[4] % 16;
  const bool huge = huge_allowed(lim) && size >= kBaseBytes + 3;
  if (huge) z.tokens = lim.max_dim + int64_t(b[kBaseBytes] | (b[kBaseBytes + 1] << 8) | (b[kBaseBytes + 2] << 16));
  z = bounded(z, s, lim, huge);
  Parts p = plain_parts(spec, s, z, "fuzz");
  p.logits = layout_from(b[5], true), p.bias_layout = layout_from(b[6], false);
  p.weights = layout_from(b[7], false), p.indices = layout_from(b[8], false);
  p.recipe = kRecipes[b[9] % std::size(kRecipes)];
  uint64_t seed = 0;
  std::memcpy(&seed, b + 10, 8);
  p.seed = seed;
  Case c = make_case(p);
  if (huge && !huge_case_fits(c, lim.huge)) {  // back to an ordinary size
    p.sizes = bounded(Sizes{int64_t(b[0] | (b[1] << 8)), z.experts, z.topk}, s, lim, false);
    c = make_case(p);
  }
  return c;
}

std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim) {
  const Parts p = parts_of(c);
  std::vector<uint8_t> out(kBaseBytes, 0);
  const bool huge = p.sizes.tokens >= lim.max_dim;
  const int64_t tokens = huge ? 0 : p.sizes.tokens;
  out[0] = uint8_t(tokens), out[1] = uint8_t(tokens >> 8);
  const int64_t e = p.sizes.experts - 1;
  out[2] = uint8_t(e), out[3] = uint8_t(e >> 8);
  out[4] = uint8_t(p.sizes.topk - 1);
  out[5] = layout_byte(p.logits), out[6] = layout_byte(p.bias_layout);
  out[7] = layout_byte(p.weights), out[8] = layout_byte(p.indices);
  out[9] = uint8_t(std::find(std::begin(kRecipes), std::end(kRecipes), p.recipe) - std::begin(kRecipes));
  std::memcpy(out.data() + 10, &p.seed, 8);
  if (huge) {
    const int64_t v = p.sizes.tokens - lim.max_dim;
    out.push_back(uint8_t(v)), out.push_back(uint8_t(v >> 8)), out.push_back(uint8_t(v >> 16));
  }
  return out;
}

Case mutate(const Case& c, const Settings& s, uint64_t random, const CodecLimits& lim) {
  Parts p = parts_of(c);
  uint64_t r = mix64(random);
  auto pick = [&](uint64_t n) {
    r = mix64(r);
    return r % n;
  };
  static constexpr int64_t kEdges[] = {1, 2, 3, 7, 8, 9, 31, 32, 33, 63, 64, 65, 127, 128, 129, 160, 255, 256, 257};
  Sizes& z = p.sizes;
  bool huge = z.tokens >= lim.max_dim;
  switch (pick(9)) {
    case 0: z.experts = kEdges[pick(std::size(kEdges))]; break;
    case 1: z.topk = int64_t(pick(2)) ? z.experts : int64_t(1 + pick(9)); break;
    case 2: z.tokens = kEdges[pick(std::size(kEdges))], huge = false; break;
    case 3: z.tokens = pick(2) ? z.tokens * 2 + 1 : z.tokens / 2; break;
    case 4: p.logits = rows::Layout{!p.logits.col_major, p.logits.pad, p.logits.offset, 0, false}; break;
    case 5: p.logits.pad = int64_t(pick(16)), p.weights.pad = int64_t(pick(4)), p.indices.offset = int64_t(pick(4)); break;
    case 6: p.recipe = kRecipes[pick(std::size(kRecipes))]; break;
    case 7:
      if (huge_allowed(lim) && pick(4) == 0) z.tokens = pick(2) ? 65536 + int64_t(pick(64)) : (int64_t(1) << 20) + 7, huge = true;
      else p.seed = mix64(p.seed + 1);
      break;
    default: p.seed = mix64(p.seed ^ r); break;
  }
  z = bounded(z, s, lim, huge);
  Case out = make_case(p);
  if (huge && !huge_case_fits(out, lim.huge)) {
    p.sizes = bounded(Sizes{lim.max_dim - 1, z.experts, z.topk}, s, lim, false);
    out = make_case(p);
  }
  return out;
}

std::vector<Case> seed_cases(const Spec& spec, const Settings& s) {
  std::vector<Case> out;
  for (auto [t, e, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 8, 2}, {4, 64, 6}, {3, 256, 8}, {5, 33, 3}}) {
    Parts p = plain_parts(spec, s, bounded(Sizes{t, e, k}, s, CodecLimits{}, false), "fuzz seed");
    p.recipe = Recipe::ints, p.seed = uint64_t(t * 1000 + e);
    if (auto fitted = fit_requires(make_case(p), spec, s)) out.push_back(*fitted);
  }
  return out;
}

bool is_huge(const Case& c, const CodecLimits& lim) { return sizes_of(c).tokens >= lim.max_dim; }

}  // namespace assay::moe_topk
