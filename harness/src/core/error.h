// The three kinds of failure that are not a kernel's fault, each with the exit
// code the CLI returns for it. A kernel's own failures are verdicts, not errors.
#pragma once
#include <stdexcept>
#include <string>

namespace assay {

enum ExitCode : int { exit_pass = 0, exit_kernel_failed = 1, exit_bad_input = 2, exit_infrastructure = 3 };

// Bad input from the user: spec, case file, flags, compiler errors (exit 2).
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The machine cannot do what was asked: no GPU, out of memory, CUDA broke (exit 3).
struct InfraError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace assay
