// Picks the reference engine for where the data lives: Eigen for host
// buffers, cuBLAS FP64 for device buffers (reference/host, reference/device).
#pragma once
#include <vector>

#include "backend/backend.h"
#include "case/case.h"

namespace assay::gemm {

struct ReferenceResult {
  std::vector<double> ref, bound, terms;  // m*n each, row-major (reference/gemm_operands.h)
};

// a, b, c0 point at the operands' data starts in the backend's memory; c0 is
// ignored when beta == 0.
ReferenceResult reference(Backend& backend, const Case& c, const std::byte* a, const std::byte* b,
                          const std::byte* c0);

}  // namespace assay::gemm
