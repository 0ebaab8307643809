// The few NVML types used are declared here, as the NVML API reference
// documents them.
#include "core/gpu_processes.h"

#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>

namespace assay {
namespace {

using nvmlDevice = void*;
struct NvmlProcessInfo {  // nvmlProcessInfo_v2_t
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
};
constexpr int kNvmlSuccess = 0, kNvmlInsufficientSize = 7;
constexpr unsigned long long kNvmlValueNotAvailable = ~0ull;

class Nvml final : public GpuProcessList {
 public:
  using InitFn = int (*)();
  using ByBusFn = int (*)(const char*, nvmlDevice*);
  using ProcessesFn = int (*)(nvmlDevice, unsigned int*, NvmlProcessInfo*);

  Nvml(void* lib, nvmlDevice device, ProcessesFn processes) : lib_(lib), device_(device), processes_(processes) {}
  ~Nvml() override {
    if (auto shutdown = reinterpret_cast<InitFn>(dlsym(lib_, "nvmlShutdown"))) shutdown();
    dlclose(lib_);
  }

  std::optional<std::vector<GpuProcess>> list() override {
    std::vector<NvmlProcessInfo> infos(64);
    unsigned int count = unsigned(infos.size());
    int r = processes_(device_, &count, infos.data());
    for (int tries = 0; r == kNvmlInsufficientSize && tries < 3; ++tries) {  // processes came meanwhile
      infos.resize(count + 16);
      count = unsigned(infos.size());
      r = processes_(device_, &count, infos.data());
    }
    if (r != kNvmlSuccess) return std::nullopt;
    std::vector<GpuProcess> out;
    for (unsigned i = 0; i < count; ++i)
      out.push_back({pid_t(infos[i].pid), infos[i].usedGpuMemory == kNvmlValueNotAvailable
                                              ? std::nullopt
                                              : std::optional<uint64_t>(infos[i].usedGpuMemory)});
    return out;
  }

 private:
  void* lib_;
  nvmlDevice device_;
  ProcessesFn processes_;
};

}  // namespace

std::unique_ptr<GpuProcessList> GpuProcessList::open(const std::string& pci_bus_id, std::string& why) {
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
  return std::make_unique<Nvml>(lib, device, processes);
}

std::optional<TreeUsage> tree_usage(const std::vector<GpuProcess>& procs, pid_t root,
                                    const std::function<std::optional<pid_t>(pid_t)>& parent_of) {
  std::map<pid_t, bool> in_tree{{root, true}};  // memo of the parent walks
  auto belongs = [&](pid_t pid) {
    std::vector<pid_t> walked;
    bool found = false;
    for (pid_t p = pid; walked.size() < 64; ) {  // deeper than any worker tree: not ours
      if (auto it = in_tree.find(p); it != in_tree.end()) {
        found = it->second;
        break;
      }
      walked.push_back(p);
      std::optional<pid_t> up = p > 1 ? parent_of(p) : std::nullopt;
      if (!up || *up == p) break;
      p = *up;
    }
    for (pid_t p : walked) in_tree[p] = found;
    return found;
  };
  TreeUsage u;
  bool root_listed = false;
  for (const GpuProcess& p : procs) {
    if (!belongs(p.pid)) {
      u.others_bytes += p.used.value_or(0);
      continue;
    }
    if (!p.used) return std::nullopt;
    root_listed |= p.pid == root;
    u.bytes += *p.used, ++u.processes;
  }
  if (!root_listed) return std::nullopt;
  return u;
}

std::optional<pid_t> parse_stat_ppid(std::string_view stat) {
  const size_t close = stat.rfind(')');  // comm ends at the last ')'
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = stat.substr(close + 1);  // " S 1234 ..."
  size_t i = 0;
  auto skip_spaces = [&] {
    while (i < rest.size() && rest[i] == ' ') ++i;
  };
  skip_spaces();
  if (i >= rest.size()) return std::nullopt;
  ++i;  // the state letter
  if (i >= rest.size() || rest[i] != ' ') return std::nullopt;
  skip_spaces();
  pid_t ppid = 0;
  size_t digits = 0;
  for (; i < rest.size() && rest[i] >= '0' && rest[i] <= '9'; ++i, ++digits) ppid = ppid * 10 + (rest[i] - '0');
  if (digits == 0 || digits > 9 || (i < rest.size() && rest[i] != ' ')) return std::nullopt;
  return ppid;
}

std::optional<pid_t> proc_parent(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", int(pid));
  std::ifstream in(path);
  std::string line((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && line.empty()) return std::nullopt;
  return parse_stat_ppid(line);
}

}  // namespace assay
