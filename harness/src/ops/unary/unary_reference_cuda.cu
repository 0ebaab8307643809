// Device reference: one thread per element of a block (a grid-stride loop,
// so any count), x read in device memory through the block's geometry, ref
// and bound brought back to host arrays.
#include <cuda_runtime.h>

#include <fmt/format.h>

#include "core/error.h"
#include "ops/unary/unary_reference_cuda.h"

namespace assay::unary {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw InfraError(fmt::format("unary reference {}: {}", what, cudaGetErrorString(err)));
  }
}

struct DeviceArray {  // scratch for one block, from the stream's memory pool
  double* p = nullptr;
  cudaStream_t s;
  DeviceArray(size_t n, cudaStream_t stream) : s(stream) {
    cudaError_t err = cudaMallocAsync(&p, (n ? n : 1) * sizeof(double), s);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw OutOfMemory(fmt::format("unary reference scratch of {} doubles: out of device memory", n));
    }
    check(err, "cudaMallocAsync");
  }
  ~DeviceArray() { cudaFreeAsync(p, s); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
};

__global__ void reference_kernel(const std::byte* x, TensorGeom g, ErrorModel e, int64_t count, double* ref,
                                 double* bound) {
  const int64_t n = g.cols();
  const int size = dtype_bytes(g.dtype);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    element(e, decode(g.dtype, load_bits(g.dtype, x + g.index(i / n, i % n) * size)), ref + i, bound + i);
}

}  // namespace

void reference_cuda(void* stream_ptr, const std::byte* x, const TensorGeom& g, const ErrorModel& e, double* ref,
                    double* bound) {
  auto stream = cudaStream_t(stream_ptr);
  const int64_t count = g.rows() * g.cols();
  if (count == 0) return;
  DeviceArray d_ref(size_t(count), stream), d_bound(size_t(count), stream);
  const int64_t want = (count + kThreads - 1) / kThreads;
  const unsigned blocks = unsigned(want < kMaxBlocks ? want : kMaxBlocks);
  reference_kernel<<<blocks, kThreads, 0, stream>>>(x, g, e, count, d_ref.p, d_bound.p);
  check(cudaGetLastError(), "launch");
  const size_t bytes = size_t(count) * sizeof(double);
  check(cudaMemcpyAsync(ref, d_ref.p, bytes, cudaMemcpyDeviceToHost, stream), "download");
  check(cudaMemcpyAsync(bound, d_bound.p, bytes, cudaMemcpyDeviceToHost, stream), "download");
  check(cudaStreamSynchronize(stream), "sync");
}

}  // namespace assay::unary
