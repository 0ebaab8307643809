#include "ops/attention/attention_fuzz.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "case/rng.h"
#include "ops/attention/attention_sweep.h"

namespace assay::attention {
namespace {

constexpr size_t kBytes = 16 + 8;
constexpr int64_t kRatios[] = {1, 2, 4, 8};
constexpr int64_t kGaps[] = {0, 3, 8, 17};
constexpr double kScaleFactors[] = {1.0, 0.0, 0.5, 2.0};  // times 1/sqrt(d); 0: the scale 1

double scale_of(int choice, int64_t d) {
  return choice == 1 ? 1.0 : kScaleFactors[choice] / std::sqrt(double(d));
}
int scale_choice(double scale, int64_t d) {
  for (int i = 0; i < 4; ++i)
    if (scale == scale_of(i, d)) return i;
  return 0;
}

uint8_t layout_byte(const Layout& l) {
  const auto gap = std::find(std::begin(kGaps), std::end(kGaps), l.batch_gap) - std::begin(kGaps);
  return uint8_t(uint8_t(l.bshd) | (std::clamp<int64_t>(l.pad, 0, 7) << 1) | (std::clamp<int64_t>(l.offset, 0, 3) << 4) |
                 (std::clamp<int64_t>(gap, 0, 3) << 6));
}
Layout layout_from(uint8_t b) { return Layout{bool(b & 1), (b >> 1) & 7, kGaps[(b >> 6) & 3], (b >> 4) & 3}; }

double elements(const Sizes& z) {
  return double(z.b) * (double(z.hq) * double(z.sq) * double(z.d + z.dv + 1) + double(z.hk) * double(z.sk) * double(z.d + z.dv));
}

// The sizes valid and within the limits: sequences below max_dim, the work
// and the tensors' elements within theirs (sk halved first, then sq, then
// the batch and the heads).
Sizes bounded(Sizes z, bool causal, const CodecLimits& lim) {
  const int64_t most = std::max<int64_t>(1, lim.max_dim - 1);
  z.b = std::clamp<int64_t>(z.b, 1, 4), z.hk = std::clamp<int64_t>(z.hk, 1, 8);
  z.hq = std::clamp<int64_t>(z.hq / z.hk, 1, 8) * z.hk;
  z.sq = std::clamp<int64_t>(z.sq, 1, most), z.sk = std::clamp<int64_t>(z.sk, 1, most);
  z.d = std::clamp<int64_t>(z.d, 1, kMaxHeadDim), z.dv = std::clamp<int64_t>(z.dv, 1, kMaxHeadDim);
  auto over = [&] {
    return double(z.b) * double(z.hq) * visible_pairs(z, causal) * double(z.d + z.dv) > lim.max_work ||
           elements(z) > lim.max_elements;
  };
  while (over()) {
    if (z.sk > 1 && z.sk >= z.sq) z.sk /= 2;
    else if (z.sq > 1) z.sq /= 2;
    else if (z.b > 1) z.b /= 2;
    else if (z.hq > z.hk) z.hq /= 2, z.hq = std::max(z.hk, z.hq / z.hk * z.hk);
    else if (z.hk > 1) z.hq = z.hk = 1;
    else if (z.d > 1 || z.dv > 1) z.d = std::max<int64_t>(1, z.d / 2), z.dv = std::max<int64_t>(1, z.dv / 2);
    else break;
  }
  return z;
}

}  // namespace

Case decode(const uint8_t* data, size_t size, const Spec& spec, const Settings& s, const CodecLimits& lim) {
  uint8_t b[kBytes] = {};
  std::memcpy(b, data, std::min(size, sizeof b));
  Sizes z;
  z.b = 1 + b[0] % 4, z.hk = 1 + b[1] % 4;
  z.hq = z.hk * kRatios[b[2] % 4];
  const int64_t most = std::max<int64_t>(1, lim.max_dim - 1);
  z.sq = 1 + int64_t(b[3] | (b[4] << 8)) % most, z.sk = 1 + int64_t(b[5] | (b[6] << 8)) % most;
  z.d = 1 + int64_t(b[7]), z.dv = 1 + int64_t(b[8]);
  const bool causal = b[9] & 1;
  z = bounded(z, causal, lim);
  Parts p = plain_parts(spec, s, z, "fuzz");
  p.causal = causal;
  p.scale = scale_of((b[9] >> 1) & 3, z.d);
  p.q = layout_from(b[10]), p.k = layout_from(b[11]), p.v = layout_from(b[12]), p.o = layout_from(b[13]);
  p.lse_layout = layout_from(b[14]);
  p.recipe = kRecipes[b[15] % std::size(kRecipes)];
  std::memcpy(&p.seed, b + 16, 8);
  return make_case(p);
}

std::vector<uint8_t> encode(const Case& c, const CodecLimits&) {
  const Parts p = parts_of(c);
  const Sizes& z = p.sizes;
  std::vector<uint8_t> out(kBytes, 0);
  out[0] = uint8_t(z.b - 1), out[1] = uint8_t(z.hk - 1);
  out[2] = uint8_t(std::find(std::begin(kRatios), std::end(kRatios), z.hq / z.hk) - std::begin(kRatios));
  out[3] = uint8_t(z.sq - 1), out[4] = uint8_t((z.sq - 1) >> 8);
  out[5] = uint8_t(z.sk - 1), out[6] = uint8_t((z.sk - 1) >> 8);
  out[7] = uint8_t(z.d - 1), out[8] = uint8_t(z.dv - 1);
  out[9] = uint8_t(uint8_t(p.causal) | (scale_choice(p.scale, z.d) << 1));
  out[10] = layout_byte(p.q), out[11] = layout_byte(p.k), out[12] = layout_byte(p.v), out[13] = layout_byte(p.o);
  out[14] = layout_byte(p.lse_layout);
  out[15] = uint8_t(std::find(std::begin(kRecipes), std::end(kRecipes), p.recipe) - std::begin(kRecipes));
  std::memcpy(out.data() + 16, &p.seed, 8);
  return out;
}

Case mutate(const Case& c, const Settings&, uint64_t random, const CodecLimits& lim) {
  Parts p = parts_of(c);
  uint64_t r = mix64(random);
  auto pick = [&](uint64_t n) {
    r = mix64(r);
    return r % n;
  };
  static constexpr int64_t kEdges[] = {1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255};
  static constexpr int64_t kDims[] = {1, 3, 16, 32, 64, 80, 96, 128, 192, 256};
  Sizes& z = p.sizes;
  const int choice = scale_choice(p.scale, z.d);
  switch (pick(10)) {
    case 0: z.sq = kEdges[pick(std::size(kEdges))]; break;
    case 1: z.sk = kEdges[pick(std::size(kEdges))]; break;
    case 2: pick(2) ? std::swap(z.sq, z.sk) : void(z.sq = z.sk); break;
    case 3: p.causal = !p.causal; break;
    case 4: z.hq = z.hk * kRatios[pick(std::size(kRatios))]; break;
    case 5: z.d = kDims[pick(std::size(kDims))], z.dv = pick(2) ? z.d : kDims[pick(std::size(kDims))]; break;
    case 6: {
      Layout* ls[] = {&p.q, &p.k, &p.v, &p.o, &p.lse_layout};
      Layout& l = *ls[pick(5)];
      l = pick(2) ? Layout{!l.bshd, l.pad, l.batch_gap, l.offset} : layout_from(uint8_t(pick(256)));
      break;
    }
    case 7: p.recipe = kRecipes[pick(std::size(kRecipes))]; break;
    case 8: p.scale = scale_of(int(pick(4)), z.d); break;
    default: p.seed = mix64(p.seed ^ r); break;
  }
  z = bounded(z, p.causal, lim);
  if (p.scale == scale_of(choice, c.size("d"))) p.scale = scale_of(choice, z.d);  // the same choice at the new d
  return make_case(p);
}

std::vector<Case> seed_cases(const Spec& spec, const Settings& s) {
  std::vector<Case> out;
  for (auto [hq, hk, sq, sk, d, causal] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, bool>{2, 1, 1, 1, 16, false}, {2, 1, 65, 65, 64, true},
        {4, 2, 37, 100, 32, false}, {8, 1, 129, 65, 64, true}}) {
    Parts p = plain_parts(spec, s, Sizes{1, hq, hk, sq, sk, d, d}, "fuzz seed");
    p.causal = causal, p.recipe = Recipe::ints, p.seed = uint64_t(sq * 1000 + sk);
    if (auto fitted = fit_requires(make_case(p), spec)) out.push_back(*fitted);
  }
  return out;
}

}  // namespace assay::attention
