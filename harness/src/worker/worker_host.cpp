// Host buffers: each call's memfds are mapped shared, so what the candidate
// writes lands in the harness's buffers, then unmapped and closed.
#include <sys/mman.h>
#include <unistd.h>

#include "worker/worker_device.h"

namespace assay::worker {
namespace {

class HostDevice final : public WorkerDevice {
 public:
  DLDevice device() const override { return DLDevice{kDLCPU, 0}; }
  void* stream() override { return nullptr; }

  std::string map(const wire::CallRequest& req, const int* fds, int nfds, Bases& base) override {
    if (req.num_buffers != nfds) return "worker: the call's buffers did not arrive";
    for (int i = 0; i < nfds; ++i) {
      void* p = mmap(nullptr, req.buffer_bytes[i], PROT_READ | PROT_WRITE, MAP_SHARED, fds[i], 0);
      if (p == MAP_FAILED) return "worker: cannot map a buffer";
      base[i] = p;
    }
    return {};
  }

  void unmap(const wire::CallRequest& req, Bases& base) override {
    for (int i = 0; i < req.num_buffers; ++i)
      if (base[i]) munmap(base[i], req.buffer_bytes[i]), base[i] = nullptr;
  }
};

}  // namespace

std::unique_ptr<WorkerDevice> host_device() { return std::make_unique<HostDevice>(); }

}  // namespace assay::worker
