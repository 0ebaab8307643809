// Device memory held by the worker process, as the driver accounts it
// (core/gpu_processes.h). The worker uses it to bound what a candidate keeps
// across calls: memory of the whole device would count other processes
// sharing the GPU (the harness's own reference, parallel campaigns) against
// the candidate.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/gpu_processes.h"

namespace assay::worker {

class ProcessMemory {
 public:
  // pci_bus_id: the CUDA device's (cudaDeviceGetPCIBusId). nullptr and `why`
  // when NVML is not installed or cannot see this process (e.g. a container
  // whose PIDs the driver does not know).
  static std::unique_ptr<ProcessMemory> open(const std::string& pci_bus_id, pid_t pid, std::string& why);
  // Bytes of device memory the process holds now; nullopt when NVML fails.
  std::optional<uint64_t> used();

 private:
  ProcessMemory(std::unique_ptr<GpuProcessList> list, pid_t pid) : list_(std::move(list)), pid_(pid) {}
  std::unique_ptr<GpuProcessList> list_;
  pid_t pid_;
};

}  // namespace assay::worker
