// Device reference: one block of threads per row (a grid-stride loop over
// rows, so any number of them), x read in device memory through its
// geometry, ref and bound left in device arrays.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/tensor_geom.h"
#include "ops/softmax/softmax_math.h"

namespace assay::softmax {

// Rows [row0, row0 + rows) of the matrix view into device arrays (rows x n,
// row-major), queued on `stream`. Throws InfraError on
// a CUDA failure, OutOfMemory when the device has no room for the scratch.
void reference_cuda(void* stream, const std::byte* x, const TensorGeom& g, const ErrorModel& e, int64_t row0,
                    int64_t rows, double* ref, double* bound);

}  // namespace assay::softmax
