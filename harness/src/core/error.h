// The three kinds of failure that are not a kernel's fault, each with the exit
// code the CLI returns for it. A kernel's own failures are verdicts, not errors.
#pragma once
#include <stdexcept>
#include <string>

namespace assay {

enum ExitCode : int { exit_pass = 0, exit_kernel_failed = 1, exit_bad_input = 2, exit_infrastructure = 3 };

// The exit code of a run made of several parts: bad input outranks a broken
// machine, which outranks a failing kernel.
inline int worse_exit(int a, int b) {
  auto rank = [](int c) { return c == exit_bad_input ? 3 : c == exit_infrastructure ? 2 : c; };
  return rank(b) > rank(a) ? b : a;
}

// Bad input from the user: spec, case file, flags, compiler errors (exit 2).
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The machine cannot do what was asked: no GPU, out of memory, CUDA broke (exit 3).
struct InfraError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The device had no room for a case's buffers or the reference's scratch. A
// gate skips that case (other processes may hold the memory) and goes on.
struct OutOfMemory : InfraError {
  using InfraError::InfraError;
};

}  // namespace assay
