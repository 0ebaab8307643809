// The one place a candidate is called. InProcessRunner calls it directly
// (fast, but a crash takes the harness down); WorkerRunner calls it in a
// separate process that maps the case's buffers (crashes and hangs become
// verdicts). The executor does not care which.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "assay/abi.h"

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

class Runner {
 public:
  virtual ~Runner() = default;
  // timeout_s: how long the call may take before it counts as a hang
  // (only a runner with its own process can enforce it).
  virtual RunStatus run(const assay_call& call, double timeout_s) = 0;
  // Several calls, in order, as one round: a worker answers them back to
  // back, so what a round costs beyond its calls (two processes taking turns
  // on the GPU, waking each other) is paid once, not per call. Appends one
  // status per call it made; it may stop after a call that ended the worker
  // (crash, hang), and the caller submits the rest again.
  virtual void run_batch(std::span<const assay_call* const> calls, std::span<const double> timeouts_s,
                         std::vector<RunStatus>& out) {
    for (size_t i = 0; i < calls.size(); ++i) out.push_back(run(*calls[i], timeouts_s[i]));
  }
};

class InProcessRunner final : public Runner {
 public:
  explicit InProcessRunner(assay_run_fn fn) : fn_(fn) {}
  RunStatus run(const assay_call& call, double timeout_s) override;

 private:
  assay_run_fn fn_;
};

}  // namespace assay
