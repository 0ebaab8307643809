// Small GEMM cases for the GPU reference tests: case i varies the sizes,
// every operand's layout (orientation, padding, offset), the recipe and
// the scalars, so that a few dozen cover their combinations.
#pragma once
#include <cstdint>

#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"

namespace assay::test {

// m in [1, m_range], n in [1, n_range], k in [k_min, k_min + 69].
inline gemm::Problem varied_gemm_case(uint64_t i, DType t, int64_t m_range, int64_t n_range, int64_t k_min,
                                      uint64_t seed) {
  gemm::Problem c;
  c.m = 1 + int64_t(i * 7 % uint64_t(m_range)), c.n = 1 + int64_t(i * 13 % uint64_t(n_range));
  c.k = k_min + int64_t(i * 5 % 70);
  c.a_type = c.b_type = c.c_type = t;
  c.a = gemm::make_layout(c.m, c.k, i % 2, i % 3, i % 2);
  c.b = gemm::make_layout(c.k, c.n, (i / 2) % 2, 0, i % 3 == 1);
  c.c = gemm::make_layout(c.m, c.n, (i / 3) % 2, i % 4, 0);
  c.recipe = Recipe(i % 4);
  c.alpha = i % 5 == 0 ? 0.7 : 1.0;
  c.beta = i % 3 == 0 ? 0.0 : 1.3;
  c.seed = seed + i;
  return c;
}

}  // namespace assay::test
