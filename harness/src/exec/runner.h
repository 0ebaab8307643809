// The one place a candidate is called. InProcessRunner calls it directly
// (fast, but a crash takes the harness down); WorkerRunner calls it in a
// separate process that maps the case's buffers (crashes and hangs become
// verdicts). The executor does not care which.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "assay/abi.h"
#include "backend/backend.h"
#include "core/deadline.h"

namespace assay {

enum class RunEnd {
  returned,
  crashed,           // the candidate's process died or lost its CUDA context
  timed_out,
  device_error,      // a CUDA error its context survives (a worker's own report)
  unordered_output,  // outputs still changed after the call's stream finished
};

struct RunStatus {
  RunEnd end = RunEnd::returned;
  int code = 0;         // assay_run's return value, when it returned
  std::string failure;  // what went wrong when it did not return normally
};

// A whole buffer copied onto another of the same size.
struct BufferCopy {
  Buffer dst, src;
};

// One call and the copies made once its work has finished (unless it crashed
// or hung): captures of what it left, the next call's inputs.
struct CallStep {
  const assay_call* call = nullptr;
  double timeout_s = 0;
  std::vector<BufferCopy> copies;
};

class Runner {
 public:
  virtual ~Runner() = default;
  // timeout_s: how long the call may take before it counts as a hang
  // (only a runner with its own process can enforce it).
  virtual RunStatus run(const assay_call& call, double timeout_s) = 0;
  // Several calls, in order, each followed by its copies, as one exchange:
  // a worker makes them back to back, so what an exchange costs beyond its
  // calls (two processes taking turns on the GPU, waking each other) is paid
  // once, not per call. Appends one status per call it made; it stops after a
  // call that ended the worker (crash, hang), and the caller submits the rest
  // again. In process, the backend makes the copies.
  virtual void run_steps(Backend& backend, std::span<const CallStep> steps, std::vector<RunStatus>& out);
  // A call still running at `d` is stopped where the runner can (a worker is
  // killed) and DeadlineReached is thrown instead of a status; what the
  // steps before it returned is in `out`. In process a call cannot be stopped.
  virtual void set_deadline(const Deadline& d) { (void)d; }
  // From another thread, for a run that ends at once (a campaign's
  // watchdog): kills the candidate's process, if it has one of its own.
  virtual void kill_now() {}
  // Ends the candidate's process, so that the next call meets a fresh one
  // with no state from earlier calls; false where the candidate has no
  // process of its own (in process: its statics cannot be cleared).
  virtual bool fresh_process() { return false; }
  // The candidate runs in a process of its own, which reports its calls'
  // device errors itself: the harness's device holds none of their work.
  virtual bool own_process() const { return false; }
};

class InProcessRunner final : public Runner {
 public:
  explicit InProcessRunner(assay_run_fn fn) : fn_(fn) {}
  RunStatus run(const assay_call& call, double timeout_s) override;

 private:
  assay_run_fn fn_;
};

}  // namespace assay
