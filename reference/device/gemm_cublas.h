// Device reference: cuBLAS DGEMM on exactly widened operands (device pointers
// in `op`), computing A*B and |A|*|B| in FP64; results land in host arrays.
#pragma once
#include "reference/gemm_operands.h"

struct cublasContext;

namespace assay::reference {

// `out`: host arrays of m*n doubles, row-major. Throws InfraError on CUDA or
// cuBLAS failure (including running out of device memory).
void gemm_cublas(cublasContext* handle, void* stream, const GemmOperands& op, const GemmResult& out);

}  // namespace assay::reference
