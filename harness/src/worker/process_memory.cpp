#include "worker/process_memory.h"

namespace assay::worker {

std::unique_ptr<ProcessMemory> ProcessMemory::open(const std::string& pci_bus_id, pid_t pid, std::string& why) {
  std::unique_ptr<GpuProcessList> list = GpuProcessList::open(pci_bus_id, why);
  if (!list) return nullptr;
  std::unique_ptr<ProcessMemory> probe(new ProcessMemory(std::move(list), pid));
  if (!probe->used()) {
    why = "NVML does not list this process on the device (a container with its own PIDs?)";
    return nullptr;
  }
  return probe;
}

std::optional<uint64_t> ProcessMemory::used() {
  std::optional<std::vector<GpuProcess>> procs = list_->list();
  if (!procs) return std::nullopt;
  for (const GpuProcess& p : *procs)
    if (p.pid == pid_) return p.used;
  return std::nullopt;
}

}  // namespace assay::worker
