#include "report/kernel_report.h"

namespace assay {

std::string KernelReport::verdict() const {
  if (!setup_error.empty()) return setup_exit == 3 ? "infrastructure_error" : "setup_error";
  if (failures.empty() && !interrupted.empty()) return "interrupted";
  if (failures.empty() && sanitizer_errors() > 0) return "sanitizer_error";
  if (failures.empty() && !infrastructure.empty()) return "infrastructure_error";
  if (failures.empty()) return cases_run > 0 ? "pass" : "no_cases";
  return std::string(assay::name(failures.front().outcome.verdict));
}

int KernelReport::sanitizer_errors() const {
  int n = 0;
  for (auto& c : sanitizer) n += c.errors > 0 ? c.errors : 0;
  return n;
}

bool KernelReport::expect_met() const { return verdict() == (expect.empty() ? "pass" : expect); }

}  // namespace assay
