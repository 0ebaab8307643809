// Device reference: cuBLAS DGEMM on exactly widened operands (device pointers
// in `op`), computing A*B and |A|*|B| in FP64; results land in host arrays.
#pragma once
#include "ops/gemm/gemm_operands.h"

struct cublasContext;

namespace assay::reference {

// Hands the result to `visit` in blocks of rows (host arrays, reused from
// block to block; reference_block_rows(m, n, 0) rows each). Device scratch:
// the widened operands and A*B, |A|*|B| whole, the combined result one block
// at a time. Throws InfraError on CUDA or cuBLAS failure (OutOfMemory when the
// device has no room); whatever `visit` throws ends it.
// in_device: the blocks are handed over in device memory (judging on the
// device), otherwise downloaded first.
void gemm_cublas(cublasContext* handle, void* stream, const GemmOperands& op, const RowBlockVisitor& visit,
                 bool in_device = false);

}  // namespace assay::reference
