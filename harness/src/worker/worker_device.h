// What a worker does around each call that depends on where the tensors
// live: host buffers arrive as memfds and are mmapped per call; cuda buffers
// arrive as CUDA IPC handles, are mapped once per allocation, and the call's
// work is waited for and classified (sticky errors, work left on other
// streams, device memory kept beyond the limit).
#pragma once
#include <memory>
#include <string>

#include <dlpack/dlpack.h>

#include "exec/worker_protocol.h"

namespace assay::worker {

using Bases = void* [wire::kMaxBuffers];  // each buffer's start in this process

class WorkerDevice {
 public:
  virtual ~WorkerDevice() = default;
  virtual DLDevice device() const = 0;
  virtual void* stream() = 0;  // what the call gets as its stream
  // "" or why the buffers could not be mapped.
  virtual std::string map(const wire::CallRequest& req, const int* fds, int nfds, Bases& base) = 0;
  virtual void before_call(const wire::CallRequest&, const Bases&) {}
  // After assay_run returned: waits for the call's work, then makes the
  // request's copies unless the call cost the worker its context; message
  // says why when the call did not end as `returned`. check_s: the part of its
  // time spent checking the outputs and copying (the rest is waiting for the
  // call's work).
  virtual wire::CallEnd after_call(const wire::CallRequest& req, const Bases& base, std::string& message,
                                   double& check_s) = 0;
  virtual void unmap(const wire::CallRequest& req, Bases& base) = 0;
  // Closes what the worker keeps mapped of these buffers (cuda: their IPC
  // mappings), so that the harness may free them.
  virtual void forget(const uint64_t* /*ids*/, int /*n*/) {}
  // After after_call: whether the device's memory was too short for this
  // call to count: the worker could not get memory for its checks, or the
  // call failed (`call_failed`) while an allocation had failed or the device
  // was full. Then the failure is the machine's on a shared GPU, not the
  // candidate's.
  virtual bool memory_was_short(bool /*call_failed*/) { return false; }
  // ---- timed batches (assay bench): work queued in the call's stream order
  // (host: done at once). The timestamps are the worker's, so the candidate
  // can reach them: the harness checks them against its own clock.
  virtual void queue_copy(void* dst, const void* src, size_t bytes) = 0;
  // Overwrites `bytes` of the worker's own memory (evicts caches); "" or why it cannot.
  virtual std::string queue_flush(size_t bytes, unsigned salt) = 0;
  virtual std::string prepare_marks(int n) = 0;  // room for n timestamps; "" or why not
  virtual void mark(int i) = 0;                  // timestamp i, when the stream reaches it
  // Waits for all of the batch's work (every stream); "" or the error.
  virtual std::string finish_batch(bool& context_lost) = 0;
  virtual double seconds_between(int a, int b) = 0;  // mark b minus mark a

  // Something the harness should tell its user once (a limit it cannot enforce).
  virtual const std::string& note() const {
    static const std::string none;
    return none;
  }
};

std::unique_ptr<WorkerDevice> host_device();
// Sets up the CUDA context on `device`; nullptr and `why` when it cannot
// (`out_of_memory`: because the device's memory is full).
// memory_limit: device memory the candidate may keep across a call.
std::unique_ptr<WorkerDevice> cuda_device(int device, size_t memory_limit, std::string& why, bool& out_of_memory);

}  // namespace assay::worker
