// Structure-aware fuzzing of layernorm and rmsnorm through the rows genome
// (ops/rows/rows_fuzz.h): the genome varies x's, weight's, (bias's) and y's
// layouts (weight and bias: strided, offset or broadcast), the recipe among
// kRecipes and the seed; eps stays 1e-5 and the statistics plain.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/op.h"
#include "ops/rows/rows_fuzz.h"

namespace assay::norm {

rows::Codec codec(const Spec& spec, bool rms);
std::vector<Case> seed_cases(const Spec& spec, bool rms);

}  // namespace assay::norm
