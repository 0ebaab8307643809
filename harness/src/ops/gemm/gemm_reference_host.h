// Host reference: Eigen in double on exactly widened operands.
#pragma once
#include "ops/gemm/gemm_operands.h"

namespace assay::reference {

// Hands the result to `visit` in blocks of rows (reference_block_rows(m, n,
// k) rows each): B is widened whole, A one block of rows at a time.
void gemm_eigen(const GemmOperands& op, const RowBlockVisitor& visit);

}  // namespace assay::reference
