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

void row_abs_max_cuda(void* stream_ptr, const std::byte* const* base, const TensorGeom* g, size_t count,
                      std::vector<std::vector<double>>& out) {
  auto stream = cudaStream_t(stream_ptr);
  int64_t total = 0;
  for (size_t t = 0; t < count; ++t) total += g[t].rows();
  cuda_reference::DeviceArray d(size_t(total), stream);
  int64_t at = 0;
  for (size_t t = 0; t < count; ++t) {
    const int64_t rows = g[t].rows();
    if (rows > 0) row_abs_max_kernel<<<unsigned(rows < 65535 ? rows : 65535), 256, 0, stream>>>(base[t], g[t], d.p + at);
    at += rows;
  }
  cuda_reference::check(cudaGetLastError(), "fp8_gemm reference", "row maxima launch");
  std::vector<double> all(static_cast<size_t>(total), 0.0);
  cuda_reference::check(cudaMemcpyAsync(all.data(), d.p, all.size() * sizeof(double), cudaMemcpyDeviceToHost, stream),
                        "fp8_gemm reference", "row maxima download");
  cuda_reference::check(cudaStreamSynchronize(stream), "fp8_gemm reference", "row maxima sync");
  out.resize(count);
  at = 0;
  for (size_t t = 0; t < count; ++t) {
    out[t].assign(all.begin() + at, all.begin() + at + g[t].rows());
    at += g[t].rows();
  }
}

}  // namespace assay::fp8_gemm
