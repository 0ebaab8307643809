// What every op's device reference needs around its kernels: CUDA errors as
// InfraError (the machine's fault, not the kernel's), and scratch arrays of
// doubles from the stream's memory pool, out of memory as OutOfMemory (which
// a shared GPU's wait-and-retry handles: exec/oom_retry.h).
#pragma once
#include <cuda_runtime.h>

#include <map>
#include <string_view>
#include <utility>
#include <vector>

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

// Small arrays given back are kept on the host for the next one of their
// size on their stream (stream order makes the reuse safe), so a small
// case's references make no allocation calls (a GEMM reference asks for some
// ten arrays, two runtime calls each). Per thread; up to kRecycleBytes an
// array and kRecycledBytes in all; release_recycled gives them back to the
// pool (CudaBackend::release_cached, and its destructor before its stream
// goes: a thread's own end leaves them, as the runtime may be gone by then).
inline constexpr size_t kRecycleBytes = size_t(4) << 20, kRecycledBytes = size_t(256) << 20;
struct Recycled {
  std::map<std::pair<cudaStream_t, size_t>, std::vector<double*>> free;
  size_t bytes = 0;
  void release() {
    for (auto& [key, list] : free)
      for (double* p : list) cudaFreeAsync(p, key.first);
    free.clear(), bytes = 0;
  }
};
inline Recycled& recycled() {
  thread_local Recycled r;
  return r;
}
inline void release_recycled() { recycled().release(); }

// n doubles (at least one) for one reference call, freed in stream order.
struct DeviceArray {
  double* p = nullptr;
  cudaStream_t s;
  size_t bytes;
  DeviceArray(size_t n, cudaStream_t stream) : s(stream), bytes((n ? n : 1) * sizeof(double)) {
    if (bytes <= kRecycleBytes) {
      Recycled& r = recycled();
      if (auto it = r.free.find({s, bytes}); it != r.free.end() && !it->second.empty()) {
        p = it->second.back(), it->second.pop_back(), r.bytes -= bytes;
        return;
      }
    }
    cudaError_t err = cudaMallocAsync(&p, bytes, s);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw OutOfMemory(fmt::format("reference scratch of {} doubles: out of device memory", n));
    }
    check(err, "reference", "cudaMallocAsync");
  }
  ~DeviceArray() {
    Recycled& r = recycled();
    if (bytes <= kRecycleBytes && r.bytes + bytes <= kRecycledBytes) {
      r.free[{s, bytes}].push_back(p), r.bytes += bytes;
      return;
    }
    cudaFreeAsync(p, s);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
};

}  // namespace assay::cuda_reference
