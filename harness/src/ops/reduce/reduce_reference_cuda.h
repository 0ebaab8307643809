// Device reference: one block of threads per row (a grid-stride loop over
// rows, so any number of them), x read in device memory through its
// geometry, one ref and bound per row brought back to host arrays.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/tensor_geom.h"
#include "ops/reduce/reduce_math.h"

namespace assay::reduce {

// Rows [row0, row0 + rows) of the matrix view into host arrays (one value
// per row), on `stream`; got (host, one per row, or null): the kernel's
// indices for `ties: any`. Returns when they are there. Throws InfraError on
// a CUDA failure, OutOfMemory when the device has no room for the scratch.
void reference_cuda(void* stream, const std::byte* x, const TensorGeom& g, const ErrorModel& e, int64_t row0,
                    int64_t rows, const double* got, double* ref, double* bound);

}  // namespace assay::reduce
