// NVML is loaded at run time (libnvidia-ml ships with the driver, not the
// toolkit: the harness builds where there is no driver). The few types used
// are declared here, as the NVML API reference documents them.
#include "worker/process_memory.h"

#include <dlfcn.h>

#include <vector>

namespace assay::worker {
namespace {

using nvmlDevice = void*;
struct NvmlProcessInfo {  // nvmlProcessInfo_v2_t
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
constexpr int kNvmlSuccess = 0, kNvmlInsufficientSize = 7;
constexpr unsigned long long kNvmlValueNotAvailable = ~0ull;

class Nvml final : public ProcessMemory {
 public:
  using InitFn = int (*)();
  using ByBusFn = int (*)(const char*, nvmlDevice*);
  using ProcessesFn = int (*)(nvmlDevice, unsigned int*, NvmlProcessInfo*);

  Nvml(void* lib, nvmlDevice device, ProcessesFn processes, pid_t pid)
      : lib_(lib), device_(device), processes_(processes), pid_(pid) {}
  ~Nvml() override {
    if (auto shutdown = reinterpret_cast<InitFn>(dlsym(lib_, "nvmlShutdown"))) shutdown();
    dlclose(lib_);
  }

  std::optional<uint64_t> used() override {
    std::vector<NvmlProcessInfo> infos(64);
    unsigned int count = unsigned(infos.size());
    int r = processes_(device_, &count, infos.data());
    if (r == kNvmlInsufficientSize) {
      infos.resize(count + 16);
      count = unsigned(infos.size());
      r = processes_(device_, &count, infos.data());
    }
    if (r != kNvmlSuccess) return std::nullopt;
    for (unsigned i = 0; i < count; ++i)
      if (pid_t(infos[i].pid) == pid_)
        return infos[i].usedGpuMemory == kNvmlValueNotAvailable ? std::nullopt
                                                                 : std::optional<uint64_t>(infos[i].usedGpuMemory);
    return std::nullopt;
  }

 private:
  void* lib_;
  nvmlDevice device_;
  ProcessesFn processes_;
  pid_t pid_;
};

}  // namespace

std::unique_ptr<ProcessMemory> ProcessMemory::open(const std::string& pci_bus_id, pid_t pid, std::string& why) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    why = "NVML (libnvidia-ml.so.1) is not installed";
    return nullptr;
  }
  auto init = reinterpret_cast<Nvml::InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto by_bus = reinterpret_cast<Nvml::ByBusFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto processes = reinterpret_cast<Nvml::ProcessesFn>(dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v3"));
  if (!processes) processes = reinterpret_cast<Nvml::ProcessesFn>(dlsym(lib, "nvmlDeviceGetComputeRunningProcesses_v2"));
  nvmlDevice device = nullptr;
  if (!init || !by_bus || !processes || init() != kNvmlSuccess || by_bus(pci_bus_id.c_str(), &device) != kNvmlSuccess) {
    why = "NVML cannot open the device " + pci_bus_id;
    dlclose(lib);
    return nullptr;
  }
  auto probe = std::make_unique<Nvml>(lib, device, processes, pid);
  if (!probe->used()) {
    why = "NVML does not list this process on the device (a container with its own PIDs?)";
    return nullptr;
  }
  return probe;
}

}  // namespace assay::worker
