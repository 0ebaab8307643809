// Structure-aware fuzzing of fp8_gemm: libFuzzer's bytes decode into sizes,
// one layout per tensor, a recipe and a seed; the mutator makes the moves
// that break block-scaled kernels (k and n at scale-block edges, long k,
// MN-major scales, padded rows, other values). Bytes: m - 1, n - 1, k - 1
// (u16 each; k may run to 64 * max_dim: a reduction costs no memory), one
// layout byte per tensor a, a_scale, b, b_scale, d (bit 0 MN-major; bits 1-3
// padding, times 8 for a, b and d; bits 4-5 the offset), the recipe (an index
// into kRecipes), u64 seed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/fp8_gemm/fp8_gemm_problem.h"
#include "ops/op.h"

namespace assay::fp8_gemm {

Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim);
std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim);
Case mutate(const Case& c, uint64_t random, const CodecLimits& lim);
std::vector<Case> seed_cases(const Spec& spec);

}  // namespace assay::fp8_gemm
