#include "ops/gemm/gemm_fuzz.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "case/rng.h"

namespace assay::gemm {
namespace {

constexpr double kScalars[] = {1, 0, -1, 0.7, 1.3};

// The byte layout: 3 x u16 dims, 3 x u8 layout, u8 alpha, u8 beta, u8 recipe,
// u64 seed; then the huge extension: u8 tag, u24 value.
struct Genome {
  uint16_t dims[3];
  uint8_t layout[3];  // bit 0: column-major; bits 1-4: padding; bits 5-6: offset
  uint8_t alpha, beta, recipe;
  uint64_t seed;
  uint8_t huge_tag;     // kHugeTag + d: dimension d takes huge_value; anything else: no huge dimension
  uint32_t huge_value;  // u24
};
constexpr size_t kBaseBytes = 6 + 3 + 3 + 8;
constexpr size_t kGenomeBytes = kBaseBytes + 4;
// A tag byte random bytes rarely hit (3 values of 256), so libFuzzer's own
// byte mutations seldom make a case huge by accident.
constexpr uint8_t kHugeTag = 0xa0;
constexpr int64_t kMaxHuge = (int64_t(1) << 24) - 1;

Genome read(const uint8_t* data, size_t size) {
  uint8_t raw[kGenomeBytes] = {};
  std::memcpy(raw, data, std::min(size, kGenomeBytes));
  Genome g;
  std::memcpy(g.dims, raw, 6);
  std::memcpy(g.layout, raw + 6, 3);
  g.alpha = raw[9], g.beta = raw[10], g.recipe = raw[11];
  std::memcpy(&g.seed, raw + 12, 8);
  g.huge_tag = raw[20];
  g.huge_value = uint32_t(raw[21]) | uint32_t(raw[22]) << 8 | uint32_t(raw[23]) << 16;
  return g;
}

uint8_t layout_byte(const Layout& l, int64_t rows, int64_t cols) {
  bool col = l.row_stride == 1 && l.col_stride != 1;
  int64_t pad = col ? l.col_stride - std::max<int64_t>(rows, 1) : l.row_stride - std::max<int64_t>(cols, 1);
  return uint8_t(col | (std::clamp<int64_t>(pad, 0, 15) << 1) | (std::clamp<int64_t>(l.offset, 0, 3) << 5));
}

Layout layout_of(uint8_t b, int64_t rows, int64_t cols) {
  return make_layout(rows, cols, b & 1, (b >> 1) & 15, (b >> 5) & 3);
}

uint8_t scalar_index(double v) {
  for (uint8_t i = 0; i < 5; ++i)
    if (kScalars[i] == v) return i;
  return 0;
}

bool huge_allowed(const CodecLimits& lim) { return lim.huge.backend == BackendKind::cuda && lim.max_huge_work > 0; }

double work(const int64_t d[3]) { return double(d[0]) * double(d[1]) * double(d[2]); }
double elements(const int64_t d[3]) {
  return double(d[0]) * double(d[2]) + double(d[2]) * double(d[1]) + double(d[0]) * double(d[1]);
}

// Ordinary dimensions: each below max_dim, m*n*k within max_work and the
// elements of A, B and C within max_elements (the cost of a case: the
// reference's products, and the fills, guards and comparisons per element);
// the largest dimension other than `keep` (the one a move just set) gives way.
void bound_ordinary(int64_t d[3], const CodecLimits& lim, int keep) {
  for (int i = 0; i < 3; ++i) d[i] = std::clamp<int64_t>(d[i], 0, lim.max_dim - 1);
  while (work(d) > lim.max_work || elements(d) > lim.max_elements) {
    int big = -1;
    for (int i = 0; i < 3; ++i)
      if (i != keep && d[i] > 1 && (big < 0 || d[i] > d[big])) big = i;
    if (big < 0) big = keep;
    d[big] /= 2;
  }
}

// Layouts re-derived from their bytes so strides stay consistent with the dims.
void set_dims(Problem& x, const int64_t d[3], const uint8_t layout[3]) {
  x.m = d[0], x.n = d[1], x.k = d[2];
  x.a = layout_of(layout[0], x.m, x.k), x.b = layout_of(layout[1], x.k, x.n), x.c = layout_of(layout[2], x.m, x.n);
}

// A huge case is one dimension (index h) in [max_dim, 2^24), the others
// ordinary, its work within max_huge_work and its bytes within the target's
// device and host budgets.
bool huge_fits(const Problem& x, int h, const CodecLimits& lim) {
  const int64_t d[3] = {x.m, x.n, x.k};
  if (!huge_allowed(lim) || d[h] < lim.max_dim || d[h] > kMaxHuge) return false;
  for (int i = 0; i < 3; ++i)
    if (i != h && (d[i] < 0 || d[i] >= lim.max_dim)) return false;
  return work(d) <= lim.max_huge_work && huge_case_fits(x, lim.huge);
}

// x's dims made valid: dimension `huge` may stay huge where it fits (else it
// drops to the largest ordinary value); every other one is ordinary, `keep`
// kept where the work bound allows.
void settle(Problem& x, const uint8_t layout[3], int huge, int keep, const CodecLimits& lim) {
  int64_t d[3] = {x.m, x.n, x.k};
  for (int64_t& v : d) v = std::clamp<int64_t>(v, 0, kMaxHuge);
  if (huge >= 0 && d[huge] >= lim.max_dim) {
    Problem h = x;
    int64_t e[3] = {d[0], d[1], d[2]};
    for (int i = 0; i < 3; ++i)
      if (i != huge) e[i] = std::min<int64_t>(e[i], lim.max_dim - 1);
    set_dims(h, e, layout);
    if (huge_fits(h, huge, lim)) {
      x = h;
      return;
    }
  }
  bound_ordinary(d, lim, keep);
  set_dims(x, d, layout);
}

int huge_dim(const Problem& c, const CodecLimits& lim) {
  const int64_t d[3] = {c.m, c.n, c.k};
  int h = -1;
  for (int i = 0; i < 3; ++i)
    if (d[i] >= lim.max_dim && (h < 0 || d[i] > d[h])) h = i;
  return h;
}

// The huge move: dimension h to 2^20..2^22 (or a neighbour), then either the
// other two small (grid and row limits) or one of them just large enough that
// a tensor holding the pair passes 2^31 elements (32-bit offsets). Falls back
// to the small variant, and then to no move, where the case would not fit.
bool huge_move(Problem& x, const uint8_t layout[3], const std::function<uint64_t()>& next, const CodecLimits& lim) {
  const int h = int(next() % 3);
  const int64_t deltas[] = {-1, 0, 1, int64_t(2 * (next() % 32) + 1)};
  const int64_t v = (int64_t(1) << (20 + next() % 3)) + deltas[next() % 4];
  int64_t d[3];
  for (int i = 0; i < 3; ++i) d[i] = int64_t(1 + next() % 8);
  d[h] = v;
  const int partner = (h + 1 + int(next() % 2)) % 3;
  const bool past_2_31 = next() % 2;
  for (bool wide : {past_2_31, false}) {
    int64_t e[3] = {d[0], d[1], d[2]};
    if (wide) e[partner] = ((int64_t(1) << 31) + v - 1) / v + int64_t(next() % 4);
    Problem y = x;
    set_dims(y, e, layout);
    if (huge_fits(y, h, lim)) {
      x = y;
      return true;
    }
  }
  return false;
}

}  // namespace

bool is_huge_problem(const Problem& c, const CodecLimits& lim) { return huge_dim(c, lim) >= 0; }

Problem decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim) {
  Genome g = read(data, size);
  Problem c;
  int64_t d[3];
  for (int i = 0; i < 3; ++i) d[i] = g.dims[i] % lim.max_dim;
  int huge = -1;
  if (huge_allowed(lim) && g.huge_tag >= kHugeTag && g.huge_tag < kHugeTag + 3 && g.huge_value >= lim.max_dim) {
    huge = g.huge_tag - kHugeTag;
    d[huge] = int64_t(g.huge_value);
  }
  { const auto d = spec_dtypes(spec); c.a_type = d[0], c.b_type = d[1], c.c_type = d[2]; }  // before settle: a huge case's bytes depend on them
  c.m = d[0], c.n = d[1], c.k = d[2];
  settle(c, g.layout, huge, -1, lim);
  c.alpha = kScalars[g.alpha % 5], c.beta = kScalars[g.beta % 5];
  c.recipe = Recipe(g.recipe % 4);
  if (c.recipe == Recipe::specials && c.alpha == 0) c.alpha = 1;  // BLAS: alpha = 0 never reads A*B
  c.seed = g.seed;
  c.origin = "fuzz";
  return c;
}

std::vector<uint8_t> encode(const Problem& c, const CodecLimits& lim) {
  const int h = huge_dim(c, lim);
  std::vector<uint8_t> out(h < 0 ? kBaseBytes : kGenomeBytes);  // ordinary cases: the 20 bytes of old
  uint16_t dims[3] = {uint16_t(c.m), uint16_t(c.n), uint16_t(c.k)};
  std::memcpy(out.data(), dims, 6);
  out[6] = layout_byte(c.a, c.m, c.k), out[7] = layout_byte(c.b, c.k, c.n), out[8] = layout_byte(c.c, c.m, c.n);
  out[9] = scalar_index(c.alpha), out[10] = scalar_index(c.beta), out[11] = uint8_t(c.recipe);
  std::memcpy(out.data() + 12, &c.seed, 8);
  if (h >= 0) {
    const uint32_t v = uint32_t(std::min<int64_t>(h == 0 ? c.m : h == 1 ? c.n : c.k, kMaxHuge));
    out[20] = uint8_t(kHugeTag + h);
    out[21] = uint8_t(v), out[22] = uint8_t(v >> 8), out[23] = uint8_t(v >> 16);
  }
  return out;
}

Problem mutate(const Problem& c, uint64_t random, const CodecLimits& lim) {
  uint64_t r = random;
  auto next = [&] { return r = mix64(r); };
  Problem x = c;
  const uint8_t layout[3] = {layout_byte(c.a, c.m, c.k), layout_byte(c.b, c.k, c.n), layout_byte(c.c, c.m, c.n)};
  // Rarely, and only where huge cases may run: one dimension past 2^20.
  if (huge_allowed(lim) && next() % 64 == 0 && huge_move(x, layout, next, lim)) return x;
  int64_t* dims[3] = {&x.m, &x.n, &x.k};
  const int which = int(next() % 3);
  int64_t& d = *dims[which];
  int keep = -1;
  switch (next() % 10) {
    case 0: d = next() % 4, keep = which; break;                                          // 0..3
    case 1: d = std::max<int64_t>(0, d + (next() % 2 ? 1 : -1)), keep = which; break;     // +-1
    case 2: {                                                                             // tile boundary
      int64_t t = int64_t(8) << (next() % 5);
      d = t + int64_t(next() % 3) - 1, keep = which;
      break;
    }
    case 3:                                                                               // scale, with neighbours
      d = (next() % 2 ? 2 * d : d / 2) + int64_t(next() % 3) - 1, keep = which;
      break;
    case 4: {                                                                             // a tensor transposed
      Layout* l[3] = {&x.a, &x.b, &x.c};
      Layout& t = *l[next() % 3];
      std::swap(t.row_stride, t.col_stride);
      break;
    }
    case 5: {                                                                             // padding or offset
      Layout* l[3] = {&x.a, &x.b, &x.c};
      Layout& t = *l[next() % 3];
      if (next() % 2) t.offset = int64_t(next() % 4);
      else (t.row_stride == 1 ? t.col_stride : t.row_stride) += int64_t(next() % 8);
      break;
    }
    case 6: x.alpha = kScalars[next() % 5]; break;
    case 7: x.beta = kScalars[next() % 5]; break;
    case 8: x.recipe = Recipe(next() % 4); break;
    default: x.seed = next(); break;
  }
  const uint8_t relayout[3] = {layout_byte(x.a, c.m, c.k), layout_byte(x.b, c.k, c.n), layout_byte(x.c, c.m, c.n)};
  // A case stays huge only in the dimension that already was (ordinary moves never make one).
  settle(x, relayout, huge_dim(c, lim), keep, lim);
  if (x.recipe == Recipe::specials && x.alpha == 0) x.alpha = 1;
  return x;
}

std::vector<Problem> seed_cases(const Spec& spec) {
  std::vector<Problem> out;
  for (int64_t d : {1, 7, 33})
    for (double beta : {0.0, 1.0}) {
      Problem c;
      c.m = c.n = c.k = d;
      { const auto t = spec_dtypes(spec); c.a_type = t[0], c.b_type = t[1], c.c_type = t[2]; }
      c.a = make_layout(d, d, false), c.b = c.a, c.c = c.a;
      c.beta = beta, c.recipe = Recipe::ints, c.seed = uint64_t(d);
      if (std::optional<Problem> fitted = fit_requires(c, spec)) out.push_back(*fitted);
    }
  return out;
}

}  // namespace assay::gemm
