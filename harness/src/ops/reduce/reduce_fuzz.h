// Structure-aware fuzzing of reduce through the rows genome (rows_fuzz.h):
// rows, n, an optional batch, x's and y's layouts, the recipe, the seed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/op.h"
#include "ops/reduce/reduce_problem.h"
#include "ops/rows/rows_fuzz.h"

namespace assay::reduce {

// The codec of a spec's cases (its dtypes; n >= 1 for max, min and arg, n
// within max_row_length).
rows::Codec codec(const Spec& spec, const Settings& s);
std::vector<Case> seed_cases(const Spec& spec, const Settings& s);

}  // namespace assay::reduce
