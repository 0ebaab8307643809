// Structure-aware fuzzing of unary ops through the rows genome
// (ops/rows/rows_fuzz.h): shape, x's and y's layouts, the recipe, the seed;
// the mutator's moves are the row-wise ones (sizes at vector and warp
// widths, transposes, padding, misaligning offsets, batches).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/op.h"
#include "ops/unary/unary_problem.h"

namespace assay::unary {

Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim);
std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim);
Case mutate(const Case& c, uint64_t random, const CodecLimits& lim);
std::vector<Case> seed_cases(const Spec& spec);
bool is_huge(const Case& c, const CodecLimits& lim);

}  // namespace assay::unary
