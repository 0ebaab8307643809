#include "exec/runner.h"

#include <exception>

namespace assay {

RunStatus InProcessRunner::run(const assay_call& call, double) {
  try {
    return RunStatus{RunEnd::returned, fn_(&call), {}};
  } catch (const std::exception& e) {
    return RunStatus{RunEnd::returned, -1, std::string("exception escaped assay_run: ") + e.what()};
  } catch (...) {
    return RunStatus{RunEnd::returned, -1, "unknown exception escaped assay_run"};
  }
}

// In process the call's work shares the harness's device: waiting for it
// takes any error it left, so a non-sticky one is reported here.
void Runner::run_steps(Backend& backend, std::span<const CallStep> steps, std::vector<RunStatus>& out) {
  for (const CallStep& step : steps) {
    RunStatus s = run(*step.call, step.timeout_s);
    if (s.end == RunEnd::returned)
      if (std::string e = backend.synchronize(); !e.empty()) s = RunStatus{RunEnd::device_error, s.code, e};
    for (const BufferCopy& c : step.copies) backend.copy(c.dst, c.src);
    out.push_back(std::move(s));
  }
}

}  // namespace assay
