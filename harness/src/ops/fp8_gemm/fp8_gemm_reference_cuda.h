// The device side of the fp8_gemm reference's error floor: the largest
// finite |x| of each row of tensors in device memory.
#pragma once
#include <cstddef>
#include <vector>

#include "core/tensor_geom.h"

namespace assay::fp8_gemm {

// out[t]: g[t].rows() doubles on the host, for `count` tensors at once (one
// download, one synchronize; arrays, not spans: nvcc compiles this as C++17).
// Throws InfraError on CUDA failure.
void row_abs_max_cuda(void* stream, const std::byte* const* base, const TensorGeom* g, size_t count,
                      std::vector<std::vector<double>>& out);

}  // namespace assay::fp8_gemm
