// Host reference: Eigen in double on exactly widened operands.
#pragma once
#include "reference/gemm_operands.h"

namespace assay::reference {

// ref and bound: m*n doubles each, row-major.
void gemm_eigen(const GemmOperands& op, double* ref, double* bound);

}  // namespace assay::reference
