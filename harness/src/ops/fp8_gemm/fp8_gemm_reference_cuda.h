// The device side of the fp8_gemm reference's bound: the largest finite
// |x| of each row of tensors in device memory, and the bound finished there.
#pragma once
#include <cstddef>
#include <vector>

#include "core/tensor_geom.h"
#include "ops/fp8_gemm/fp8_gemm_bound.h"

namespace assay::fp8_gemm {

// out[t]: g[t].rows() doubles on the host, for `count` tensors at once (one
// download, one synchronize; arrays, not spans: nvcc compiles this as C++17).
// Throws InfraError on CUDA failure.
void row_abs_max_cuda(void* stream, const std::byte* const* base, const TensorGeom* g, size_t count,
                      std::vector<std::vector<double>>& out);

// bound[r * n + j] = rel * bound[...] + floor_of(rows row0 + r of a, j of b),
// in place in device memory, for rows [row0, row0 + rows) of d. The row
// maxima (RowMaxima's four arrays, host memory) go up once per call.
void finish_bound_cuda(void* stream, double* bound, int64_t row0, int64_t rows, int64_t n, int64_t k,
                       const ErrorModel& e, const double* const maxima[4], const size_t sizes[4]);

}  // namespace assay::fp8_gemm
