#include "fuzz/case_codec.h"

#include <algorithm>
#include <cstring>

#include "case/rng.h"
#include "ops/gemm/gemm_generator.h"

namespace assay::fuzz {
namespace {

constexpr double kScalars[] = {1, 0, -1, 0.7, 1.3};

// The byte layout: 3 x u16 dims, 3 x u8 layout, u8 alpha, u8 beta, u8 recipe, u64 seed.
struct Genome {
  uint16_t dims[3];
  uint8_t layout[3];  // bit 0: column-major; bits 1-4: padding; bits 5-6: offset
  uint8_t alpha, beta, recipe;
  uint64_t seed;
};
constexpr size_t kGenomeBytes = 6 + 3 + 3 + 8;

Genome read(const uint8_t* data, size_t size) {
  uint8_t raw[kGenomeBytes] = {};
  std::memcpy(raw, data, std::min(size, kGenomeBytes));
  Genome g;
  std::memcpy(g.dims, raw, 6);
  std::memcpy(g.layout, raw + 6, 3);
  g.alpha = raw[9], g.beta = raw[10], g.recipe = raw[11];
  std::memcpy(&g.seed, raw + 12, 8);
  return g;
}

uint8_t layout_byte(const Layout& l, int64_t rows, int64_t cols) {
  bool col = l.row_stride == 1 && l.col_stride != 1;
  int64_t pad = col ? l.col_stride - std::max<int64_t>(rows, 1) : l.row_stride - std::max<int64_t>(cols, 1);
  return uint8_t(col | (std::clamp<int64_t>(pad, 0, 15) << 1) | (std::clamp<int64_t>(l.offset, 0, 3) << 5));
}

Layout layout_of(uint8_t b, int64_t rows, int64_t cols) {
  return gemm::make_layout(rows, cols, b & 1, (b >> 1) & 15, (b >> 5) & 3);
}

uint8_t scalar_index(double v) {
  for (uint8_t i = 0; i < 5; ++i)
    if (kScalars[i] == v) return i;
  return 0;
}

}  // namespace

Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim) {
  Genome g = read(data, size);
  Case c;
  int64_t d[3];
  for (int i = 0; i < 3; ++i) d[i] = g.dims[i] % lim.max_dim;
  c.m = d[0], c.n = d[1], c.k = d[2];
  c.a_type = spec.a, c.b_type = spec.b, c.c_type = spec.c;
  c.a = layout_of(g.layout[0], c.m, c.k), c.b = layout_of(g.layout[1], c.k, c.n), c.c = layout_of(g.layout[2], c.m, c.n);
  c.alpha = kScalars[g.alpha % 5], c.beta = kScalars[g.beta % 5];
  c.recipe = Recipe(g.recipe % 4);
  if (c.recipe == Recipe::specials && c.alpha == 0) c.alpha = 1;  // BLAS: alpha = 0 never reads A*B
  c.seed = g.seed;
  c.origin = "fuzz";
  return c;
}

std::vector<uint8_t> encode(const Case& c) {
  std::vector<uint8_t> out(kGenomeBytes);
  uint16_t dims[3] = {uint16_t(c.m), uint16_t(c.n), uint16_t(c.k)};
  std::memcpy(out.data(), dims, 6);
  out[6] = layout_byte(c.a, c.m, c.k), out[7] = layout_byte(c.b, c.k, c.n), out[8] = layout_byte(c.c, c.m, c.n);
  out[9] = scalar_index(c.alpha), out[10] = scalar_index(c.beta), out[11] = uint8_t(c.recipe);
  std::memcpy(out.data() + 12, &c.seed, 8);
  return out;
}

Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) {
  uint64_t r = random;
  auto next = [&] { return r = mix64(r); };
  Case x = c;
  int64_t* dims[3] = {&x.m, &x.n, &x.k};
  int64_t& d = *dims[next() % 3];
  switch (next() % 10) {
    case 0: d = next() % 4; break;                                                // 0..3
    case 1: d = std::max<int64_t>(0, d + (next() % 2 ? 1 : -1)); break;           // +-1
    case 2: {                                                                     // tile boundary
      int64_t t = int64_t(8) << (next() % 5);
      d = t + int64_t(next() % 3) - 1;
      break;
    }
    case 3: d = (next() % 2 ? 2 * d : d / 2) + int64_t(next() % 3) - 1; break;   // scale, with neighbours
    case 4: {                                                                     // a tensor transposed
      Layout* l[3] = {&x.a, &x.b, &x.c};
      Layout& t = *l[next() % 3];
      std::swap(t.row_stride, t.col_stride);
      break;
    }
    case 5: {                                                                     // padding or offset
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
  for (int64_t* v : dims) *v = std::clamp<int64_t>(*v, 0, lim.max_dim - 1);
  // Re-derive layouts from their bytes so strides stay consistent with the dims.
  x.a = layout_of(layout_byte(x.a, c.m, c.k), x.m, x.k);
  x.b = layout_of(layout_byte(x.b, c.k, c.n), x.k, x.n);
  x.c = layout_of(layout_byte(x.c, c.m, c.n), x.m, x.n);
  if (x.recipe == Recipe::specials && x.alpha == 0) x.alpha = 1;
  return x;
}

}  // namespace assay::fuzz
