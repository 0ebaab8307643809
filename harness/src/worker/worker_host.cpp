// Host buffers: each call's memfds are mapped shared, so what the candidate
// writes lands in the harness's buffers, then unmapped and closed. Only its
// tensors' buffers are mapped while it runs: the others (captures of earlier
// calls, the next call's inputs) only for the copies after it returned, so a
// launcher that writes over its process's memory cannot reach them.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "worker/worker_device.h"

namespace assay::worker {
namespace {

class HostDevice final : public WorkerDevice {
 public:
  DLDevice device() const override { return DLDevice{kDLCPU, 0}; }
  void* stream() override { return nullptr; }

  std::string map(const wire::CallRequest& req, const int* fds, int nfds, Bases& base) override {
    if (req.num_buffers != nfds) return "worker: the call's buffers did not arrive";
    fds_ = fds;
    // A timed batch's pages are faulted in here, before its first call: else
    // the first call on an input set not yet seen pays this process's page
    // faults (about a microsecond a page), and a tiny kernel's first calls
    // look slower than its repeats (a false cached_result under load).
    const bool timed = req.kind == wire::RequestKind::timed;
    for (int i = 0; i < req.num_inputs + req.num_outputs; ++i) {
      const int b = req.tensors[i].buffer;
      if (!base[b] && !(base[b] = map_one(req, b, timed))) return "worker: cannot map a buffer";
    }
    // A timed batch's copies run between its calls: every buffer is mapped.
    if (timed)
      for (int b = 0; b < req.num_buffers; ++b)
        if (!base[b] && !(base[b] = map_one(req, b, true))) return "worker: cannot map a buffer";
    return {};
  }

  // On the host the work of a call is done when it returns.
  void queue_copy(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  std::string queue_flush(size_t bytes, unsigned salt) override {
    if (flush_.size() < bytes) flush_.assign(bytes, std::byte{0});  // touched once: no page faults later
    std::memset(flush_.data(), int(salt & 0xff), bytes);
    return {};
  }
  std::string prepare_marks(int n) override {
    marks_.assign(size_t(n), {});
    return {};
  }
  void mark(int i) override { marks_[size_t(i)] = std::chrono::steady_clock::now(); }
  std::string finish_batch(bool& context_lost) override {
    context_lost = false;
    return {};
  }
  double seconds_between(int a, int b) override {
    return std::chrono::duration<double>(marks_[size_t(b)] - marks_[size_t(a)]).count();
  }

  // The candidate's work is done when it returns: only the copies are left.
  wire::CallEnd after_call(const wire::CallRequest& req, const Bases& base, std::string& message, double&) override {
    Bases late = {};  // the buffers only the copies use
    auto at = [&](int b) { return base[b] ? base[b] : late[b] ? late[b] : (late[b] = map_one(req, b)); };
    wire::CallEnd end = wire::CallEnd::returned;
    for (int i = 0; i < req.num_copies && end == wire::CallEnd::returned; ++i) {
      void *dst = at(req.copies[i].dst), *src = at(req.copies[i].src);
      if (dst && src) {
        std::memcpy(dst, src, req.copies[i].bytes);
      } else {
        message = "worker: cannot map a buffer to copy";
        end = wire::CallEnd::fatal;
      }
    }
    for (int b = 0; b < req.num_buffers; ++b)
      if (late[b]) munmap(late[b], req.buffer_bytes[b]);
    return end;
  }

  void unmap(const wire::CallRequest& req, Bases& base) override {
    for (int i = 0; i < req.num_buffers; ++i)
      if (base[i]) munmap(base[i], req.buffer_bytes[i]), base[i] = nullptr;
  }

 private:
  void* map_one(const wire::CallRequest& req, int b, bool populate = false) {
    void* p = mmap(nullptr, req.buffer_bytes[b], PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? MAP_POPULATE : 0),
                   fds_[b], 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  const int* fds_ = nullptr;  // the current call's, from map()
  std::vector<std::chrono::steady_clock::time_point> marks_;
  std::vector<std::byte> flush_;  // cold runs overwrite it
};

}  // namespace

std::unique_ptr<WorkerDevice> host_device() { return std::make_unique<HostDevice>(); }

}  // namespace assay::worker
