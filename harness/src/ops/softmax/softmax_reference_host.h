// Host reference: straight loops over x's matrix view (x in host memory).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/tensor_geom.h"
#include "ops/softmax/softmax_math.h"

namespace assay::softmax {

// Rows [row0, row0 + rows) of the matrix view: ref and bound, rows x n row-major.
void reference_host(const std::byte* x, const TensorGeom& g, const ErrorModel& e, int64_t row0, int64_t rows,
                    double* ref, double* bound);

}  // namespace assay::softmax
