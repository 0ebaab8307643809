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

}  // namespace assay
