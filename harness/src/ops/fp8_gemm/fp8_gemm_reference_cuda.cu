#include "ops/fp8_gemm/fp8_gemm_reference_cuda.h"

#include <cuda_runtime.h>

#include <vector>

#include "backend/cuda/reference_scratch.h"

namespace assay::fp8_gemm {
namespace {

// One thread block per row, the row's columns strided over its threads.
__global__ void row_abs_max_kernel(const std::byte* base, TensorGeom g, double* out) {
  __shared__ double best[256];
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = blockIdx.x; r < g.rows(); r += gridDim.x) {
    double m = 0;
    for (int64_t c = threadIdx.x; c < g.cols(); c += blockDim.x) {
      const double v = fabs(decode(g.dtype, load_bits(g.dtype, base + g.index(r, c) * size)));
      if (v <= 1.7976931348623157e308 && v > m) m = v;  // finite only
    }
    best[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s && best[threadIdx.x + s] > best[threadIdx.x]) best[threadIdx.x] = best[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[r] = best[0];
    __syncthreads();
  }
}

}  // namespace

void row_abs_max_cuda(void* stream_ptr, const std::byte* base, const TensorGeom& g, double* out) {
  auto stream = cudaStream_t(stream_ptr);
  const int64_t rows = g.rows();
  if (rows == 0) return;
  cuda_reference::DeviceArray d(size_t(rows), stream);
  const unsigned grid = unsigned(rows < 65535 ? rows : 65535);
  row_abs_max_kernel<<<grid, 256, 0, stream>>>(base, g, d.p);
  cuda_reference::check(cudaGetLastError(), "fp8_gemm reference", "row maxima launch");
  cuda_reference::check(cudaMemcpyAsync(out, d.p, size_t(rows) * sizeof(double), cudaMemcpyDeviceToHost, stream),
                        "fp8_gemm reference", "row maxima download");
  cuda_reference::check(cudaStreamSynchronize(stream), "fp8_gemm reference", "row maxima sync");
}

}  // namespace assay::fp8_gemm
