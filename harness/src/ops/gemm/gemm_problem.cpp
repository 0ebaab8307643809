#include "ops/gemm/gemm_problem.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "case/rng.h"

namespace assay::gemm {

std::array<TensorGeom, 3> tensors(const Case& c) {
  auto geom = [](DType t, int64_t rows, int64_t cols, const Layout& l) {
    return TensorGeom{t, rows, cols, l.row_stride, l.col_stride, l.offset};
  };
  return {geom(c.a_type, c.m, c.k, c.a), geom(c.b_type, c.k, c.n, c.b), geom(c.c_type, c.m, c.n, c.c)};
}

double default_timeout(const Case& c, BackendKind backend) {
  const double work = 2.0 * double(c.m) * double(c.n) * double(c.k);
  return 5.0 + work / (backend == BackendKind::host ? 5e7 : 1e10);
}

RecipeParams recipe_params(const Case& c, Operand which) {
  RecipeParams p;
  p.recipe = c.recipe;
  p.keep = c.keep[which];  // the shrinker's nonzero cut (case/values.h)
  const double k = double(std::max<int64_t>(c.k, 1));
  const int out_bits = mantissa_bits(c.c_type);
  switch (c.recipe) {
    case Recipe::ints: {
      // benchdnn's idea: integers small and sparse enough that the exact sum
      // stays an integer the output type holds, so the comparison can be exact.
      p.int_range = 3;
      double target = std::ldexp(1.0, out_bits - 3) / (4.0 * k);
      p.density = which == C ? 1.0 : std::min(1.0, std::sqrt(target));
      break;
    }
    case Recipe::mixed: {
      // Magnitudes spread over 2^lo..2^hi without overflowing the output.
      double room = std::log2(max_finite(c.c_type)) - std::log2(k) - 2.0;
      int hi = std::clamp(int(room / 2.0), 0, 24);
      bool half_in = c.a_type == DType::f16 || c.b_type == DType::f16 || c.c_type == DType::f16;
      p.exp_hi = hi;
      p.exp_lo = -std::min(hi, half_in ? 10 : 24);
      break;
    }
    case Recipe::specials: {
      auto t = tensors(c)[which];
      p.density = std::min(0.25, 4.0 / double(std::max<int64_t>(t.count(), 1)));
      break;
    }
    case Recipe::uniform: break;
  }
  return p;
}

SparseChange sparse_change(const Case& c) {
  auto t = tensors(c);
  std::vector<int> candidates;  // the tensors whose elements the result depends on
  if (c.alpha != 0.0 && c.m > 0 && c.n > 0 && c.k > 0) candidates = {A, B};
  if (reads_c0(c) && t[C].count() > 0) candidates.push_back(C);
  SparseChange s;
  if (candidates.empty()) return s;
  uint64_t h = mix64(c.seed ^ 0x5ba25e0003ull);
  auto next = [&h](uint64_t n) { h = mix64(h + 0x9e3779b97f4a7c15ull); return h % n; };
  s.tensor = candidates[next(candidates.size())];
  const TensorGeom& g = t[s.tensor];
  s.patch.seed = mix64(c.seed ^ 0x5eed0003ull);
  switch (next(3)) {
    case 0: s.patch.listed = 1; break;  // one element
    case 1: s.patch.row = int64_t(next(uint64_t(g.rows))); return s;
    default: s.patch.listed = int32_t(2 + next(Patch::kMaxListed - 1)); break;  // 2..8 scattered
  }
  for (int i = 0; i < s.patch.listed; ++i)
    s.patch.at[i] = keep_position(next(uint64_t(g.rows)), next(uint64_t(g.cols)));
  return s;
}

std::optional<double> Context::variable(std::string_view name) const {
  if (name == "m") return double(c_.m);
  if (name == "n") return double(c_.n);
  if (name == "k") return double(c_.k);
  if (name == "alpha") return c_.alpha;
  if (name == "beta") return c_.beta;
  return std::nullopt;
}

std::optional<TensorGeom> Context::tensor(std::string_view name) const {
  if (name == "A") return t_[A];
  if (name == "B") return t_[B];
  if (name == "C") return t_[C];
  return std::nullopt;
}

}  // namespace assay::gemm
