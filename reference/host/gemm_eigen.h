// Host reference: Eigen in double on exactly widened operands.
#pragma once
#include "reference/gemm_operands.h"

namespace assay::reference {

// Each array of `out`: m*n doubles, row-major.
void gemm_eigen(const GemmOperands& op, const GemmResult& out);

}  // namespace assay::reference
