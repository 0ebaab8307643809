// The device reference of one block (unary_reference_cuda.cu); plain C++17
// for nvcc.
#pragma once
#include <cstddef>

#include "core/tensor_geom.h"
#include "ops/unary/unary_math.h"

namespace assay::unary {

// The block's elements (geometry gx: its matrix view, row-major order) into
// device arrays ref and bound, queued on `stream`.
// Throws InfraError on a CUDA failure, OutOfMemory when the scratch does not fit.
void reference_cuda(void* stream, const std::byte* x, const TensorGeom& gx, const ErrorModel& e, double* ref,
                    double* bound);

}  // namespace assay::unary
