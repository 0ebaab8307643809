#include "ops/gemm/gemm_problem.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "case/rng.h"
#include "core/error.h"

namespace assay::gemm {

std::array<TensorGeom, 3> tensors(const Problem& c) {
  auto geom = [](DType t, int64_t rows, int64_t cols, const Layout& l) {
    return TensorGeom::matrix(t, rows, cols, l.row_stride, l.col_stride, l.offset);
  };
  return {geom(c.a_type, c.m, c.k, c.a), geom(c.b_type, c.k, c.n, c.b), geom(c.c_type, c.m, c.n, c.c)};
}

double default_timeout(const Problem& c, BackendKind backend) {
  const double work = 2.0 * double(c.m) * double(c.n) * double(c.k);
  return 5.0 + work / (backend == BackendKind::host ? 5e7 : 1e10);
}

RecipeParams recipe_params(const Problem& c, Operand which) {
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
    case Recipe::uniform:
    case Recipe::offset:  // the default large mean over a small spread
      break;
  }
  return p;
}

SparseChange sparse_change(const Problem& c) {
  auto t = tensors(c);
  std::vector<int> candidates;  // the tensors whose elements the result depends on
  if (c.alpha != 0.0 && c.m > 0 && c.n > 0 && c.k > 0) candidates = {A, B};
  if (reads_c0(c) && t[C].count() > 0) candidates.push_back(C);
  return draw_sparse_change(to_case(c), candidates);
}

Relabeling relabeling(const Problem& c) {
  // A's rows and C's by the same amount, B's columns and C's by another: C
  // moves as its products do (docs/cases.md). Drawn from the case's seed.
  uint64_t h = mix64(c.seed ^ 0x726f746174ull);
  auto shift = [&h](int64_t extent) {
    h = mix64(h + 0x9e3779b97f4a7c15ull);
    return extent > 1 ? 1 + int64_t(h % uint64_t(extent - 1)) : int64_t(0);
  };
  const int64_t by_rows = shift(c.m), by_cols = shift(c.n);
  if (by_rows == 0 && by_cols == 0) return {};
  Relabeling r;
  r.of.resize(3);
  r.of[A] = Rotation{by_rows, 0, c.m, c.k};
  r.of[B] = Rotation{0, by_cols, c.k, c.n};
  r.of[C] = Rotation{by_rows, by_cols, c.m, c.n};
  return r;
}

void changed_parts(const SparseChange& change, std::vector<int64_t>& rows, std::vector<int64_t>& cols,
                   int64_t& b_row) {
  const Patch& p = change.patch;
  b_row = -1;
  if (change.tensor < 0 || change.tensor == C || !p.any()) return;
  if (change.tensor == B && p.row >= 0) {
    b_row = p.row;
    return;
  }
  std::vector<int64_t>& into = change.tensor == A ? rows : cols;
  if (p.row >= 0) into.push_back(p.row);
  for (int32_t i = 0; i < p.listed; ++i)  // keep_position: (row << 32) | col
    into.push_back(change.tensor == A ? int64_t(p.at[i] >> 32) : int64_t(p.at[i] & 0xffffffffull));
  std::sort(into.begin(), into.end());
  into.erase(std::unique(into.begin(), into.end()), into.end());
}

namespace {

constexpr const char* kNames[3] = {"A", "B", "C"};

CaseTensor tensor_of(const char* name, Role role, const TensorGeom& g, const Keep& keep) {
  CaseTensor t;
  t.name = name, t.role = role, t.dtype = g.dtype;
  t.shape = {g.shape[0], g.shape[1]}, t.strides = {g.strides[0], g.strides[1]};
  t.offset = g.offset, t.keep = keep;
  return t;
}

}  // namespace

Case to_case(const Problem& p) {
  Case c;
  c.op = "gemm";
  c.sizes = {{"m", p.m}, {"n", p.n}, {"k", p.k}};
  const auto g = tensors(p);
  for (int i = 0; i < 3; ++i) c.tensors.push_back(tensor_of(kNames[i], i < 2 ? Role::input : Role::inout, g[i], p.keep[i]));
  c.scalars = {{"alpha", p.alpha}, {"beta", p.beta}};
  c.recipe = p.recipe, c.seed = p.seed, c.origin = p.origin;
  return c;
}

void validate_case(const Case& c) {
  auto bad = [&](const std::string& why) { throw InputError("not a gemm case: " + why + " (" + describe(c) + ")"); };
  if (c.sizes.size() != 3 || c.sizes[0].name != "m" || c.sizes[1].name != "n" || c.sizes[2].name != "k")
    bad("its sizes must be m, n, k");
  if (c.tensors.size() != 3) bad("it must have tensors A, B, C");
  if (c.scalars.size() != 2 || c.scalars[0].name != "alpha" || c.scalars[1].name != "beta")
    bad("its scalars must be alpha, beta");
  const int64_t m = c.sizes[0].value, n = c.sizes[1].value, k = c.sizes[2].value;
  const int64_t rows[3] = {m, k, m}, cols[3] = {k, n, n};
  for (int i = 0; i < 3; ++i) {
    const CaseTensor& t = c.tensors[size_t(i)];
    if (t.name != kNames[i]) bad(fmt::format("tensor {} must be named {}", i, kNames[i]));
    if (t.role != (i < 2 ? Role::input : Role::inout)) bad(fmt::format("{} has the wrong role", t.name));
    if (t.shape.size() != 2 || t.shape[0] != rows[i] || t.shape[1] != cols[i])
      bad(fmt::format("{} must have shape [{}, {}]", t.name, rows[i], cols[i]));
  }
}

Problem problem(const Case& c) {
  validate_case(c);
  Problem p;
  p.m = c.sizes[0].value, p.n = c.sizes[1].value, p.k = c.sizes[2].value;
  DType* types[3] = {&p.a_type, &p.b_type, &p.c_type};
  Layout* layouts[3] = {&p.a, &p.b, &p.c};
  for (int i = 0; i < 3; ++i) {
    const CaseTensor& t = c.tensors[size_t(i)];
    *types[i] = t.dtype;
    *layouts[i] = Layout{t.strides[0], t.strides[1], t.offset};
    p.keep[size_t(i)] = t.keep;
  }
  p.alpha = c.scalars[0].value, p.beta = c.scalars[1].value;
  p.recipe = c.recipe, p.seed = c.seed, p.origin = c.origin;
  return p;
}

std::array<DType, 3> spec_dtypes(const Spec& spec) {
  return {spec.dtype_or("a", DType::f32), spec.dtype_or("b", DType::f32), spec.dtype_or("c", DType::f32)};
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
