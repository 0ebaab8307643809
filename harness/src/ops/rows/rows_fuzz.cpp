#include "ops/rows/rows_fuzz.h"

#include <algorithm>
#include <cstring>

#include "case/rng.h"

namespace assay::rows {
namespace {

constexpr uint8_t kHugeTag = 0xa0;  // + 0: rows, + 1: n
constexpr int64_t kMaxHuge = (int64_t(1) << 24) - 1;
constexpr int64_t kGap = 5;

size_t base_bytes(const Codec& k) { return 2 + 2 + 1 + k.layouts + 1 + 8; }

uint8_t layout_byte(const Layout& l) {
  return uint8_t(uint8_t(l.col_major) | (std::clamp<int64_t>(l.pad, 0, 15) << 1) |
                 (std::clamp<int64_t>(l.offset, 0, 3) << 5) | (l.batch_gap > 0 || l.broadcast ? 0x80 : 0));
}
Layout layout_from(uint8_t b, bool batched) {
  const bool bit7 = (b & 0x80) != 0;
  return Layout{bool(b & 1), (b >> 1) & 15, (b >> 5) & 3, bit7 && batched ? kGap : 0, bit7};
}

bool huge_allowed(const CodecLimits& lim) { return lim.huge.backend == BackendKind::cuda && lim.max_huge_work > 0; }

// Ordinary sizes: each below max_dim, the elements within max_work and
// max_elements; the larger of rows and n other than `keep` gives way.
void bound_ordinary(const Codec& k, Shape& s, const CodecLimits& lim, int keep) {
  s.rows = std::clamp<int64_t>(s.rows, 0, lim.max_dim - 1);
  s.n = std::clamp<int64_t>(s.n, 0, lim.max_dim - 1);
  s.b = std::clamp<int64_t>(s.b, 0, 8);
  while (s.elements() > lim.max_work || k.element_tensors * s.elements() > lim.max_elements) {
    int64_t* big = keep == 0 ? &s.rows : keep == 1 ? &s.n : (s.rows > s.n ? &s.rows : &s.n);
    if (*big <= 1) big = big == &s.n ? &s.rows : &s.n;
    if (*big <= 1) {
      s.b = std::max<int64_t>(1, s.b / 2);
      if (s.b == 1) break;
      continue;
    }
    *big /= 2;
  }
}

int huge_dim(const Shape& s, const CodecLimits& lim) {
  if (s.rows >= lim.max_dim) return 0;
  if (s.n >= lim.max_dim) return 1;
  return -1;
}

bool huge_fits(const Codec& k, const Genome& g, const CodecLimits& lim) {
  const Shape& s = g.shape;
  const int h = huge_dim(s, lim);
  if (!huge_allowed(lim) || h < 0 || (h == 0 ? s.rows : s.n) > kMaxHuge) return false;
  if ((h == 0 ? s.n : s.rows) >= lim.max_dim || s.b > 8) return false;
  return s.elements() <= lim.max_huge_work && k.huge_case_fits(k.make(g), lim.huge);
}

// g's sizes made valid: a huge dimension stays where it fits, else all ordinary.
void settle(const Codec& k, Genome& g, const CodecLimits& lim, int keep) {
  if (huge_dim(g.shape, lim) >= 0 && huge_fits(k, g, lim)) return;
  bound_ordinary(k, g.shape, lim, keep);
}

uint8_t recipe_index(const Codec& k, Recipe r) {
  const auto at = std::find(k.recipes.begin(), k.recipes.end(), r);
  return uint8_t(at == k.recipes.end() ? 0 : at - k.recipes.begin());
}

}  // namespace

bool is_huge(const Case& c, const CodecLimits& lim) { return huge_dim(shape_of(c), lim) >= 0; }

Case decode(const Codec& k, const uint8_t* data, size_t size, const CodecLimits& lim) {
  const size_t base = base_bytes(k), all = base + 4;
  std::vector<uint8_t> raw(all, 0);
  std::memcpy(raw.data(), data, std::min(size, all));
  uint16_t rows, n;
  std::memcpy(&rows, raw.data(), 2);
  std::memcpy(&n, raw.data() + 2, 2);
  Genome g;
  g.shape = Shape{bool(raw[4] & 0x80), int64_t(1 + (raw[4] & 7)), rows % lim.max_dim, n % lim.max_dim};
  if (!g.shape.batched) g.shape.b = 1;
  for (size_t i = 0; i < k.layouts; ++i) g.layouts.push_back(layout_from(raw[5 + i], g.shape.batched));
  g.recipe = k.recipes[raw[5 + k.layouts] % k.recipes.size()];
  std::memcpy(&g.seed, raw.data() + 6 + k.layouts, 8);
  const uint8_t tag = raw[base];
  const int64_t value = int64_t(raw[base + 1]) | int64_t(raw[base + 2]) << 8 | int64_t(raw[base + 3]) << 16;
  if (huge_allowed(lim) && (tag == kHugeTag || tag == kHugeTag + 1) && value >= lim.max_dim)
    (tag == kHugeTag ? g.shape.rows : g.shape.n) = value;
  settle(k, g, lim, -1);
  return k.make(g);
}

std::vector<uint8_t> encode(const Codec& k, const Case& c, const CodecLimits& lim) {
  const Genome g = k.genome(c);
  const int h = huge_dim(g.shape, lim);
  const size_t base = base_bytes(k);
  std::vector<uint8_t> out(h < 0 ? base : base + 4);
  const uint16_t rows = uint16_t(g.shape.rows), n = uint16_t(g.shape.n);
  std::memcpy(out.data(), &rows, 2);
  std::memcpy(out.data() + 2, &n, 2);
  out[4] = g.shape.batched ? uint8_t(0x80 | (std::clamp<int64_t>(g.shape.b, 1, 8) - 1)) : 0;
  for (size_t i = 0; i < k.layouts && i < g.layouts.size(); ++i) out[5 + i] = layout_byte(g.layouts[i]);
  out[5 + k.layouts] = recipe_index(k, g.recipe);
  std::memcpy(out.data() + 6 + k.layouts, &g.seed, 8);
  if (h >= 0) {
    const uint32_t v = uint32_t(std::min<int64_t>(h == 0 ? g.shape.rows : g.shape.n, kMaxHuge));
    out[base] = uint8_t(kHugeTag + h);
    out[base + 1] = uint8_t(v), out[base + 2] = uint8_t(v >> 8), out[base + 3] = uint8_t(v >> 16);
  }
  return out;
}

Case mutate(const Codec& k, const Case& c, uint64_t random, const CodecLimits& lim) {
  uint64_t r = random;
  auto next = [&] { return r = mix64(r); };
  Genome g = k.genome(c);
  g.layouts.resize(k.layouts);
  const bool was_huge = huge_dim(g.shape, lim) >= 0;
  // Rarely, where huge cases may run: rows past 65,535 or 2^20 (n short), or n past 2^16.
  if (huge_allowed(lim) && next() % 64 == 0) {
    Genome h = g;
    const int64_t d = int64_t(next() % 3) - 1;
    if (next() % 2) {
      h.shape.rows = (next() % 2 ? 65536 : int64_t(1) << 20) + d, h.shape.n = int64_t(1 + next() % 64);
    } else {
      h.shape.n = (int64_t(1) << (16 + next() % 3)) + d, h.shape.rows = int64_t(1 + next() % 8);
    }
    h.shape.batched = false, h.shape.b = 1;
    if (huge_fits(k, h, lim)) return k.make(h);
  }
  int64_t& size = next() % 2 ? g.shape.n : g.shape.rows;
  const int keep = &size == &g.shape.n ? 0 : 1;
  const size_t which = size_t(next() % std::max<size_t>(k.layouts, 1));
  Layout dummy;
  Layout& l = k.layouts ? g.layouts[which] : dummy;
  switch (next() % 12) {
    case 0: size = int64_t(1 + next() % 3); break;                                  // 1, 2, 3
    case 1: size = 31 + int64_t(next() % 3); break;                                 // 31, 32, 33
    case 2: size = (int64_t(1) << (next() % 11)) + int64_t(next() % 3) - 1; break;  // 2^k, +-1
    case 3: size = std::max<int64_t>(0, size + (next() % 2 ? 1 : -1)); break;
    case 4: size = (next() % 2 ? 2 * size : size / 2) + int64_t(next() % 3) - 1; break;
    case 5: l.col_major = !l.col_major; break;
    case 6: l.pad = int64_t(next() % 8); break;
    case 7: l.offset = int64_t(next() % 4); break;
    case 8:
      g.shape.batched = !g.shape.batched, g.shape.b = g.shape.batched ? int64_t(1 + next() % 4) : 1;
      if (!g.shape.batched) {
        for (Layout& x : g.layouts) x.batch_gap = 0;
      } else if (next() % 2 && !g.layouts.empty()) {
        g.layouts[0].batch_gap = kGap;
      }
      break;
    case 9: g.recipe = k.recipes[next() % k.recipes.size()]; break;
    case 10: l.broadcast = !l.broadcast; break;  // per-column tensors only; others ignore it
    default: g.seed = next(); break;
  }
  size = std::max<int64_t>(size, 0);
  if (!was_huge) {
    bound_ordinary(k, g.shape, lim, keep);
  } else {
    settle(k, g, lim, keep);
  }
  return k.make(g);
}

}  // namespace assay::rows
