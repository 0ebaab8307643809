// The device side of the fp8_gemm reference's error floor: the largest
// finite |x| of each row of a tensor in device memory.
#pragma once
#include "core/tensor_geom.h"

namespace assay::fp8_gemm {

// out: g.rows() doubles on the host. Throws InfraError on CUDA failure.
void row_abs_max_cuda(void* stream, const std::byte* base, const TensorGeom& g, double* out);

}  // namespace assay::fp8_gemm
