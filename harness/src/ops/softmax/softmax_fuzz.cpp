#include "ops/softmax/softmax_fuzz.h"

#include <algorithm>
#include <cstring>

#include "case/rng.h"
#include "ops/softmax/softmax_sweep.h"

namespace assay::softmax {
namespace {

constexpr size_t kBaseBytes = 2 + 2 + 1 + 1 + 1 + 1 + 8;
constexpr size_t kGenomeBytes = kBaseBytes + 4;
constexpr uint8_t kHugeTag = 0xa0;  // + 0: rows, + 1: n
constexpr int64_t kMaxHuge = (int64_t(1) << 24) - 1;
constexpr int64_t kGap = 5;

uint8_t layout_byte(const Layout& l) {
  return uint8_t(uint8_t(l.col_major) | (std::clamp<int64_t>(l.pad, 0, 15) << 1) |
                 (std::clamp<int64_t>(l.offset, 0, 3) << 5) | (l.batch_gap > 0 ? 0x80 : 0));
}
Layout layout_from(uint8_t b) { return Layout{bool(b & 1), (b >> 1) & 15, (b >> 5) & 3, (b & 0x80) ? kGap : 0}; }

bool huge_allowed(const CodecLimits& lim) { return lim.huge.backend == BackendKind::cuda && lim.max_huge_work > 0; }

// Ordinary sizes: each below max_dim, the elements within max_work and
// max_elements (x and y); the larger of rows and n other than `keep` gives way.
void bound_ordinary(Shape& s, const CodecLimits& lim, int keep) {
  s.rows = std::clamp<int64_t>(s.rows, 0, lim.max_dim - 1);
  s.n = std::clamp<int64_t>(s.n, 0, lim.max_dim - 1);
  s.b = std::clamp<int64_t>(s.b, 0, 8);
  while (s.elements() > lim.max_work || 2 * s.elements() > lim.max_elements) {
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

bool huge_fits(const Parts& p, const CodecLimits& lim) {
  const Shape& s = p.shape;
  const int h = huge_dim(s, lim);
  if (!huge_allowed(lim) || h < 0 || (h == 0 ? s.rows : s.n) > kMaxHuge) return false;
  if ((h == 0 ? s.n : s.rows) >= lim.max_dim || s.b > 8) return false;
  return s.elements() <= lim.max_huge_work && huge_case_fits(make_case(p), lim.huge);
}

// p's sizes made valid: a huge dimension stays where it fits, else all ordinary.
void settle(Parts& p, const CodecLimits& lim, int keep) {
  if (huge_dim(p.shape, lim) >= 0 && huge_fits(p, lim)) return;
  bound_ordinary(p.shape, lim, keep);
}

}  // namespace

bool is_huge(const Case& c, const CodecLimits& lim) { return huge_dim(shape_of(c), lim) >= 0; }

Case decode(const uint8_t* data, size_t size, const Spec& spec, bool log, const CodecLimits& lim) {
  uint8_t raw[kGenomeBytes] = {};
  std::memcpy(raw, data, std::min(size, kGenomeBytes));
  uint16_t rows, n;
  std::memcpy(&rows, raw, 2);
  std::memcpy(&n, raw + 2, 2);
  Parts p = plain_parts(spec, log, Shape{bool(raw[4] & 0x80), int64_t(1 + (raw[4] & 7)), rows % lim.max_dim,
                                         n % lim.max_dim},
                        "fuzz");
  if (!p.shape.batched) p.shape.b = 1;
  p.x = layout_from(raw[5]), p.y = layout_from(raw[6]);
  if (!p.shape.batched) p.x.batch_gap = p.y.batch_gap = 0;
  p.recipe = Recipe(raw[7] % 4);
  std::memcpy(&p.seed, raw + 8, 8);
  const uint8_t tag = raw[16];
  const int64_t value = int64_t(raw[17]) | int64_t(raw[18]) << 8 | int64_t(raw[19]) << 16;
  if (huge_allowed(lim) && (tag == kHugeTag || tag == kHugeTag + 1) && value >= lim.max_dim)
    (tag == kHugeTag ? p.shape.rows : p.shape.n) = value;
  settle(p, lim, -1);
  return make_case(p);
}

std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim) {
  const Parts p = parts_of(c);
  const int h = huge_dim(p.shape, lim);
  std::vector<uint8_t> out(h < 0 ? kBaseBytes : kGenomeBytes);
  const uint16_t rows = uint16_t(p.shape.rows), n = uint16_t(p.shape.n);
  std::memcpy(out.data(), &rows, 2);
  std::memcpy(out.data() + 2, &n, 2);
  out[4] = p.shape.batched ? uint8_t(0x80 | (std::clamp<int64_t>(p.shape.b, 1, 8) - 1)) : 0;
  out[5] = layout_byte(p.x), out[6] = layout_byte(p.y), out[7] = uint8_t(p.recipe);
  std::memcpy(out.data() + 8, &p.seed, 8);
  if (h >= 0) {
    const uint32_t v = uint32_t(std::min<int64_t>(h == 0 ? p.shape.rows : p.shape.n, kMaxHuge));
    out[16] = uint8_t(kHugeTag + h);
    out[17] = uint8_t(v), out[18] = uint8_t(v >> 8), out[19] = uint8_t(v >> 16);
  }
  return out;
}

Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) {
  uint64_t r = random;
  auto next = [&] { return r = mix64(r); };
  Parts p = parts_of(c);
  const bool was_huge = huge_dim(p.shape, lim) >= 0;
  // Rarely, where huge cases may run: rows past 65,535 or 2^20 (n short), or n past 2^16.
  if (huge_allowed(lim) && next() % 64 == 0) {
    Parts h = p;
    const int64_t d = int64_t(next() % 3) - 1;
    if (next() % 2) {
      h.shape.rows = (next() % 2 ? 65536 : int64_t(1) << 20) + d, h.shape.n = int64_t(1 + next() % 64);
    } else {
      h.shape.n = (int64_t(1) << (16 + next() % 3)) + d, h.shape.rows = int64_t(1 + next() % 8);
    }
    h.shape.batched = false, h.shape.b = 1;
    if (huge_fits(h, lim)) return make_case(h);
  }
  int64_t& size = next() % 2 ? p.shape.n : p.shape.rows;
  const int keep = &size == &p.shape.n ? 0 : 1;
  Layout& l = next() % 2 ? p.x : p.y;
  switch (next() % 11) {
    case 0: size = int64_t(1 + next() % 3); break;                              // 1, 2, 3
    case 1: size = 31 + int64_t(next() % 3); break;                             // 31, 32, 33
    case 2: size = (int64_t(1) << (next() % 11)) + int64_t(next() % 3) - 1; break;  // 2^k, +-1
    case 3: size = std::max<int64_t>(0, size + (next() % 2 ? 1 : -1)); break;
    case 4: size = (next() % 2 ? 2 * size : size / 2) + int64_t(next() % 3) - 1; break;
    case 5: l.col_major = !l.col_major; break;
    case 6: l.pad = int64_t(next() % 8); break;
    case 7: l.offset = int64_t(next() % 4); break;
    case 8:
      p.shape.batched = !p.shape.batched, p.shape.b = p.shape.batched ? int64_t(1 + next() % 4) : 1;
      if (!p.shape.batched) p.x.batch_gap = p.y.batch_gap = 0;
      else if (next() % 2) p.x.batch_gap = kGap;
      break;
    case 9: p.recipe = Recipe(next() % 4); break;
    default: p.seed = next(); break;
  }
  size = std::max<int64_t>(size, 0);
  if (!was_huge) {
    bound_ordinary(p.shape, lim, keep);
  } else {
    settle(p, lim, keep);
  }
  return make_case(p);
}

std::vector<Case> seed_cases(const Spec& spec, bool log) {
  std::vector<Case> out;
  for (int64_t n : {1, 7, 33})
    for (int64_t rows : {1, 4}) {
      Parts p = plain_parts(spec, log, Shape{false, 1, rows, n}, "fuzz seed");
      p.recipe = Recipe::ints, p.seed = uint64_t(n * 16 + rows);
      if (auto fitted = fit_requires(make_case(p), spec)) out.push_back(*fitted);
    }
  return out;
}

}  // namespace assay::softmax
