// Host bytes into a backend buffer. The Backend interface has fills and
// downloads but no upload (the gate never needs one: its values are generated
// where the data lives); the baselines draw on the host as the published
// checkers do, so they copy here instead of widening Backend.
#include <cstring>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "baseline/common.h"
#include "core/error.h"

namespace assay::baseline {

void upload(Backend& backend, Buffer b, const std::byte* host) {
  if (backend.kind() == BackendKind::host) {
    std::memcpy(b.data, host, b.bytes);
    return;
  }
  // The backend's stream is non-blocking: queue the copy on it, then wait,
  // so it is ordered with the fills and calls around it.
  auto stream = static_cast<cudaStream_t>(backend.stream());
  cudaError_t e = cudaMemcpyAsync(b.data, host, b.bytes, cudaMemcpyHostToDevice, stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess) throw InfraError(fmt::format("baseline upload: {}", cudaGetErrorString(e)));
}

}  // namespace assay::baseline
