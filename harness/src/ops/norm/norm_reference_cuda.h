// What the host and device references share, compiled by nvcc as C++17
// too (no C++20 headers here): the inputs as the kernel saw them and one
// block's result arrays.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/tensor_geom.h"
#include "ops/norm/norm_math.h"

namespace assay::norm {

// The inputs as the kernel was handed them (backend memory, data starts).
struct Inputs {
  const std::byte* x = nullptr;
  const std::byte* w = nullptr;
  const std::byte* b = nullptr;  // nullptr for rmsnorm
  TensorGeom gx, gw, gb;
};
// One block's results (device arrays for reference_cuda): y ref and bound
// rows x n row-major; mean ref, mean bound, rstd ref, rstd bound, one per
// row each, one after the other (stat[i] = stat[0] + i * rows).
struct BlockOut {
  double* y_ref;
  double* y_bound;
  double* stat[4];
};
enum StatArray : int { MeanRef = 0, MeanBound = 1, RstdRef = 2, RstdBound = 3 };

// Queued on `stream`. Throws InfraError on a CUDA failure.
void reference_cuda(void* stream, const Inputs& in, const ErrorModel& e, int64_t row0, int64_t rows,
                    const BlockOut& out);

}  // namespace assay::norm
