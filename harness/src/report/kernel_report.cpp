#include "report/kernel_report.h"

namespace assay {

std::string KernelReport::verdict() const {
  if (!setup_error.empty()) return setup_exit == 3 ? "infrastructure_error" : "setup_error";
  if (failures.empty()) return cases_run > 0 ? "pass" : "no_cases";
  return std::string(assay::name(failures.front().outcome.verdict));
}

bool KernelReport::expect_met() const { return verdict() == (expect.empty() ? "pass" : expect); }

}  // namespace assay
