// Today's published correctness rules for GEMM kernels, reproduced as checkers
// that run a candidate through the same Backend and Runner as assay's gate
// (issue #5): KernelBench's eval, the SGEMM-tutorial check and PyTorch's
// assert_close defaults. `assay zoo` sets them side by side with the gate.
// docs/baselines.md gives each rule's source and how it is modelled here.
#pragma once
#include <cstdint>
#include <string>

#include "backend/backend.h"
#include "exec/runner.h"
#include "spec/spec.h"

namespace assay::baseline {

struct BaselineResult {
  std::string checker;      // "kernelbench", "tutorial", "assert_close", "deepgemm"
  bool applicable = true;   // false: the rule cannot judge this kernel (detail says why)
  bool caught = false;      // the rule rejected the kernel
  std::string detail;       // the first failure, or why the rule does not apply
  std::string failed_case;  // which of the rule's cases failed first ("trial 2", "size 256", ...)
  double seconds = 0;       // running cases until the first failure (else all of them)
  int cases_run = 0;        // candidate calls made
  int cases_skipped = 0;    // the rule's cases outside the spec's requires or the backend's limits
};

struct BaselineOptions {
  uint64_t seed = 42;    // KernelBench's default seed_num; the other rules draw from it too
  double timeout_s = 0;  // per call; 0: scaled with the case's size, as in the gate
};

BaselineResult run_kernelbench(Backend& backend, Runner& runner, const Spec& spec, const BaselineOptions& opt = {});
BaselineResult run_tutorial(Backend& backend, Runner& runner, const Spec& spec, const BaselineOptions& opt = {});
BaselineResult run_assert_close(Backend& backend, Runner& runner, const Spec& spec, const BaselineOptions& opt = {});
// DeepGEMM's own test (fp8_gemm only; not applicable to the other families).
BaselineResult run_deepgemm(Backend& backend, Runner& runner, const Spec& spec, const BaselineOptions& opt = {});

}  // namespace assay::baseline
