#include "ops/fp8_gemm/fp8_gemm_fuzz.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "case/rng.h"
#include "ops/fp8_gemm/fp8_gemm_sweep.h"

namespace assay::fp8_gemm {
namespace {

constexpr size_t kBytes = 6 + 5 + 1 + 8;

bool is_data(int tensor) { return tensor == A || tensor == B || tensor == D; }

uint8_t layout_byte(const Layout& l, int tensor) {
  const int64_t pad = is_data(tensor) ? l.pad / 8 : l.pad;
  return uint8_t(uint8_t(l.col_major && !is_data(tensor)) | (std::clamp<int64_t>(pad, 0, 7) << 1) |
                 (std::clamp<int64_t>(l.offset, 0, 3) << 4));
}
Layout layout_from(uint8_t b, int tensor) {
  Layout l;
  l.col_major = !is_data(tensor) && (b & 1);
  l.pad = ((b >> 1) & 7) * (is_data(tensor) ? 8 : 1);
  l.offset = (b >> 4) & 3;
  return l;
}

// The sizes within the limits: m and n below max_dim, k below 64 max_dim;
// the work and the tensors' elements within theirs (k halved first, then
// the larger of m and n).
Sizes bounded(Sizes z, const CodecLimits& lim) {
  const int64_t most = std::max<int64_t>(1, lim.max_dim - 1);
  z.m = std::clamp<int64_t>(z.m, 1, most), z.n = std::clamp<int64_t>(z.n, 1, most);
  z.k = std::clamp<int64_t>(z.k, 1, 64 * most);
  auto over = [&] {
    const double elements = double(z.m) * double(z.k) + double(z.n) * double(z.k) + double(z.m) * double(z.n);
    return double(z.m) * double(z.n) * double(z.k) > lim.max_work || elements > lim.max_elements;
  };
  while (over() && (z.m > 1 || z.n > 1 || z.k > 1)) {
    if (z.k > 1 && z.k >= std::max(z.m, z.n)) z.k /= 2;
    else if (z.m >= z.n) z.m = std::max<int64_t>(1, z.m / 2);
    else z.n = std::max<int64_t>(1, z.n / 2);
  }
  return z;
}

}  // namespace

Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim) {
  uint8_t b[kBytes] = {};
  std::memcpy(b, data, std::min(size, sizeof b));
  Sizes z{1 + int64_t(b[0] | (b[1] << 8)), 1 + int64_t(b[2] | (b[3] << 8)), 1 + int64_t(b[4] | (b[5] << 8))};
  Parts p = plain_parts(spec, bounded(z, lim), "fuzz");
  for (int t = 0; t < 5; ++t) layout_at(p, t) = layout_from(b[6 + t], t);
  p.recipe = kRecipes[b[11] % std::size(kRecipes)];
  std::memcpy(&p.seed, b + 12, 8);
  return make_case(p);
}

std::vector<uint8_t> encode(const Case& c, const CodecLimits&) {
  Parts p = parts_of(c);
  const Sizes& z = p.sizes;
  std::vector<uint8_t> out(kBytes, 0);
  const int64_t dims[] = {z.m - 1, z.n - 1, z.k - 1};
  for (int i = 0; i < 3; ++i) out[size_t(2 * i)] = uint8_t(dims[i]), out[size_t(2 * i + 1)] = uint8_t(dims[i] >> 8);
  for (int t = 0; t < 5; ++t) out[size_t(6 + t)] = layout_byte(layout_at(p, t), t);
  out[11] = uint8_t(std::find(std::begin(kRecipes), std::end(kRecipes), p.recipe) - std::begin(kRecipes));
  std::memcpy(out.data() + 12, &p.seed, 8);
  return out;
}

Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) {
  Parts p = parts_of(c);
  uint64_t r = mix64(random);
  auto pick = [&](uint64_t n) {
    r = mix64(r);
    return r % n;
  };
  static constexpr int64_t kEdges[] = {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255};
  static constexpr int64_t kDepthEdges[] = {1, 32, 100, 127, 128, 129, 255, 256, 257, 383, 384, 385, 1024, 4096, 8192};
  Sizes& z = p.sizes;
  switch (pick(8)) {
    case 0: z.m = kEdges[pick(std::size(kEdges))]; break;
    case 1: z.n = kEdges[pick(std::size(kEdges))]; break;
    case 2: z.k = kDepthEdges[pick(std::size(kDepthEdges))]; break;
    case 3: {
      const int t = int(pick(5));
      Layout& l = layout_at(p, t);
      l = pick(2) && !is_data(t) ? Layout{!l.col_major, l.pad, l.offset, 0, false} : layout_from(uint8_t(pick(256)), t);
      break;
    }
    case 4: p.recipe = kRecipes[pick(std::size(kRecipes))]; break;
    case 5: z.k = std::max<int64_t>(1, z.k + int64_t(pick(3)) - 1); break;
    default: p.seed = mix64(p.seed ^ r); break;
  }
  z = bounded(z, lim);
  return make_case(p);
}

std::vector<Case> seed_cases(const Spec& spec) {
  std::vector<Case> out;
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {16, 64, 128}, {33, 65, 129}, {8, 130, 384}}) {
    Parts p = plain_parts(spec, Sizes{m, n, k}, "fuzz seed");
    p.recipe = Recipe::ints, p.seed = uint64_t(m * 1000 + k);
    if (auto fitted = fit_requires(make_case(p), spec)) out.push_back(*fitted);
  }
  return out;
}

}  // namespace assay::fp8_gemm
