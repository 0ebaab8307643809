#include "ops/fp8_gemm/fp8_gemm_reference_cuda.h"

#include <cuda_runtime.h>

#include <vector>

#include "backend/cuda/reference_scratch.h"

namespace assay::fp8_gemm {
namespace {

// One thread block per row, the row's columns strided over its threads.
__global__ void row_abs_max_kernel(const std::byte* base, const __grid_constant__ TensorGeom g, double* out) {
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

__global__ void finish_bound_kernel(double* bound, int64_t row0, int64_t rows, int64_t n, int64_t k, const __grid_constant__ ErrorModel e,
                                    const double* a, const double* sa, const double* b, const double* sb) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = row0 + i / n, j = i % n;
    bound[i] = e.rel * bound[i] + floor_of(e, k, a[r], sa[r], b[j], sb[j / kFloorBlock]);
  }
}

}  // namespace

void finish_bound_cuda(void* stream_ptr, double* bound, int64_t row0, int64_t rows, int64_t n, int64_t k,
                       const ErrorModel& e, const double* const maxima[4], const size_t sizes[4]) {
  auto stream = cudaStream_t(stream_ptr);
  const size_t total = sizes[0] + sizes[1] + sizes[2] + sizes[3];
  cuda_reference::DeviceArray d(total, stream);
  size_t at = 0;
  const double* part[4];
  for (int t = 0; t < 4; ++t) {
    if (sizes[t])
      cuda_reference::check(cudaMemcpyAsync(d.p + at, maxima[t], sizes[t] * sizeof(double), cudaMemcpyHostToDevice, stream),
                            "fp8_gemm reference", "row maxima upload");
    part[t] = d.p + at, at += sizes[t];
  }
  const int64_t count = rows * n;
  if (count > 0) {
    const int64_t blocks = (count + 255) / 256;
    finish_bound_kernel<<<unsigned(blocks < 65536 ? blocks : 65536), 256, 0, stream>>>(bound, row0, rows, n, k, e,
                                                                                       part[0], part[1], part[2], part[3]);
  }
  cuda_reference::check(cudaGetLastError(), "fp8_gemm reference", "bound launch");
  // The maxima were copied from pageable memory before the call returned;
  // the kernel's results are read in stream order.
}

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
