// Runs the candidate in an assay-worker process (issue #3). The harness keeps
// every buffer, guard and reference; the worker maps the case's buffers, calls
// assay_run and answers. A worker that dies is reported as a crash, one that
// overruns its timeout is killed and reported as a hang; the next call starts
// a fresh worker.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <atomic>

#include <filesystem>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "exec/runner.h"

namespace assay {
namespace wire { struct CallRequest; }

struct WorkerOptions {
  std::filesystem::path library;  // the compiled candidate
  std::string entry = "assay_run";
  size_t memory_limit = size_t(16) << 30;  // host memory of the worker (RLIMIT_AS; RLIMIT_DATA for cuda)
  // cuda: device memory the candidate may keep between calls beyond the
  // case's buffers, measured for the worker process alone (NVML); 0: not checked.
  size_t device_memory_limit = size_t(8) << 30;
  double cpu_limit_s = 3600;               // RLIMIT_CPU, a backstop behind the timeout
  std::filesystem::path log_file;          // the worker's stdout and stderr; empty: /dev/null
};

// Where the time of the worker's calls went, summed over calls (seconds).
struct WorkerProfile {
  long calls = 0;
  double before = 0;      // the harness's synchronize before each call
  double round_trip = 0;  // first request sent to last reply read, all of the worker's part included
  double run = 0, wait = 0, check = 0;  // the worker's own: assay_run, its work, the order check
};

// A timed batch of assay bench: `calls` calls back to back in the worker,
// each after its input set's copies (call i: sets[i % sets.size()]) and,
// for cold runs, the flush buffer overwritten; each call's outputs captured
// right after it (exec/worker_protocol.h, kind timed).
struct TimedBatch {
  const assay_call* call = nullptr;
  int calls = 0;
  std::vector<std::vector<BufferCopy>> sets;
  size_t flush_bytes = 0;  // cold runs: the worker overwrites this much of its own memory; 0: none
  Buffer capture;
  size_t capture_stride = 0;
  bool no_call = false;  // the steps alone: what the harness's own work costs
  double timeout_s = 60;
};
struct BatchTimes {
  RunStatus status;
  std::vector<double> call_s;  // per call made, the worker's timestamps
  double span_s = 0;           // the worker's: the first call's start to the last one's end
  double wall_s = 0;           // the harness's own clock: request sent to timings read
  // Of that wall time, how long the worker's serving thread and the
  // harness's thread sat ready but not running (the kernel's runqueue
  // accounting, /proc/.../schedstat; 0 where it is not available): a loaded
  // machine's preemption, which no process can turn into running time.
  double wait_s = 0;
};

class WorkerRunner final : public Runner {
 public:
  // Host buffers are shared as memfds, cuda ones as CUDA IPC handles.
  WorkerRunner(Backend& backend, WorkerOptions opt);
  ~WorkerRunner() override;
  // A fresh worker that cannot set up the device throws (OutOfMemory when its
  // memory is full, else InfraError): the machine's fault is no verdict.
  RunStatus run(const assay_call& call, double timeout_s) override;
  // The worker makes the copies; the backend is the one it was made with.
  void run_steps(Backend& backend, std::span<const CallStep> steps, std::vector<RunStatus>& out) override;
  void set_deadline(const Deadline& d) override { deadline_ = d; }
  void kill_now() override {
    if (const pid_t p = pid_; p > 0) kill(-p, SIGKILL);
  }
  bool own_process() const override { return true; }
  bool fresh_process() override {
    stop();  // the next call starts a new worker
    return true;
  }
  // Starts the worker now; "" or why the kernel cannot be loaded there.
  std::string warm_up() { return pid_ >= 0 ? std::string{} : start(); }
  // Whether the last start failed on the device (not the kernel's fault),
  // and whether because its memory was full (transient on a shared GPU).
  bool device_unavailable() const { return device_unavailable_; }
  bool device_out_of_memory() const { return device_out_of_memory_; }
  int workers_started() const { return started_; }
  // The worker closes its mappings of these buffers (before the backend
  // frees them) and stays; it is stopped only when it does not answer.
  void forget(const std::vector<uint64_t>& ids);
  const WorkerProfile& profile() const { return profile_; }
  // One timed batch (assay bench). Throws InfraError when it cannot be
  // described to the worker; a call that fails ends the batch (status).
  BatchTimes time_batch(const TimedBatch& batch);
  void reset_profile() { profile_ = {}; }

 private:
  int unmap_hook_ = 0;  // the backend's key for this worker's forget hook
  std::string start();  // "" or why the worker could not start
  void stop();
  RunStatus reap(const char* during);  // the worker died: how?
  RunStatus await_reply(double timeout_s);  // the next call's answer, or how the worker ended
  // The request's buffer table (fds on the host, ids and IPC handles on
  // cuda), the tensors' places in it and the copies.
  // `extra`: more buffers for the table; their indices go to extra_index.
  void describe_buffers(const CallStep& step, wire::CallRequest& req, int* fds,
                        std::span<const Buffer> extra = {}, int* extra_index = nullptr);

  Backend& backend_;
  WorkerOptions opt_;
  std::atomic<pid_t> pid_{-1};  // read by kill_now from another thread
  int sock_ = -1;
  int started_ = 0;
  bool device_unavailable_ = false, device_out_of_memory_ = false;
  WorkerProfile profile_;
  Deadline deadline_;  // each call's wait is clipped to it
};

// assay-worker next to the running executable (or $ASSAY_WORKER).
std::filesystem::path worker_executable();

}  // namespace assay
