// What every op's device reference needs around its kernels: CUDA errors as
// InfraError (the machine's fault, not the kernel's), and scratch arrays of
// doubles from the stream's memory pool, out of memory as OutOfMemory (which
// a shared GPU's wait-and-retry handles: exec/oom_retry.h).
#pragma once
#include <cuda_runtime.h>

#include <string_view>

#include <fmt/format.h>

#include "core/error.h"

namespace assay::cuda_reference {

// Throws InfraError "WHO WHAT: cuda's message" (the error cleared first).
inline void check(cudaError_t err, std::string_view who, const char* what) {
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw InfraError(fmt::format("{} {}: {}", who, what, cudaGetErrorString(err)));
  }
}

// n doubles (at least one) for one reference call, freed in stream order.
struct DeviceArray {
  double* p = nullptr;
  cudaStream_t s;
  DeviceArray(size_t n, cudaStream_t stream) : s(stream) {
    cudaError_t err = cudaMallocAsync(&p, (n ? n : 1) * sizeof(double), s);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw OutOfMemory(fmt::format("reference scratch of {} doubles: out of device memory", n));
    }
    check(err, "reference", "cudaMallocAsync");
  }
  ~DeviceArray() { cudaFreeAsync(p, s); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
};

}  // namespace assay::cuda_reference
