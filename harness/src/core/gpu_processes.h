// Device memory per process, as the driver accounts it (NVML,
// nvmlDeviceGetComputeRunningProcesses). Memory of the whole device would
// count the other processes sharing the GPU; these figures let a harness
// bound its own share (itself and its workers) and a worker bound what its
// candidate keeps. NVML is loaded at run time (libnvidia-ml ships with the
// driver, not the toolkit): the binaries start where it is missing. Plain
// C++ with no dependency, so that assay-worker links it too.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace assay {

struct GpuProcess {
  pid_t pid = 0;
  std::optional<uint64_t> used;  // bytes; nullopt where NVML cannot tell (some drivers, MIG)
};

class GpuProcessList {
 public:
  // pci_bus_id: the CUDA device's (cudaDeviceGetPCIBusId). nullptr and `why`
  // when NVML is not installed or cannot open that device.
  static std::unique_ptr<GpuProcessList> open(const std::string& pci_bus_id, std::string& why);
  virtual ~GpuProcessList() = default;
  // Every compute process on the device now; nullopt when NVML fails.
  virtual std::optional<std::vector<GpuProcess>> list() = 0;
};

// How one process tree holds the device: its own bytes and those of the rest.
struct TreeUsage {
  uint64_t bytes = 0;        // root and its descendants
  int processes = 0;         // of the tree, on the device
  uint64_t others_bytes = 0; // every other process on the device
};

// The usage of `root` and its descendants among `procs` (a descendant's
// parent chain, through `parent_of`, reaches root). nullopt when root itself
// is not listed or a process of the tree has no figure: NVML does not see
// this PID namespace (a container) or cannot account per process.
std::optional<TreeUsage> tree_usage(const std::vector<GpuProcess>& procs, pid_t root,
                                    const std::function<std::optional<pid_t>(pid_t)>& parent_of);

// The parent PID in a /proc/PID/stat line ("pid (comm) state ppid ..."; comm
// may hold spaces and parentheses); nullopt when malformed.
std::optional<pid_t> parse_stat_ppid(std::string_view stat);
// The parent of pid from /proc; nullopt when the process is gone.
std::optional<pid_t> proc_parent(pid_t pid);

}  // namespace assay
