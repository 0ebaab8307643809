// ASSAY_HD marks functions compiled for both host and device, so that value
// generation and rounding give the same bits on the GPU and on the host.
#pragma once
#if defined(__CUDACC__)
#define ASSAY_HD __host__ __device__ inline
#else
#define ASSAY_HD inline
#endif
