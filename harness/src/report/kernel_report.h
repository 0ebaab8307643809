// What a gate run learned about one kernel: counts, skips, and every failing
// case with the file and command that replay it. Reporters only read this.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "case/case.h"
#include "exec/executor.h"
#include "gate/sanitize.h"
#include "spec/spec.h"

namespace assay {

struct CaseFailure {
  Case c;
  CaseOutcome outcome;  // without tensors
  std::filesystem::path case_file;
  std::string repro;    // one command line
  struct Shrunk {
    std::filesystem::path case_file;  // empty: not shrunk
    std::string explanation;
  } shrunk;
};

// A case the machine could not run: the device's memory stayed short past
// every retry (exec/oom_retry.h). The message has the memory figures.
struct CaseInfraError {
  int64_t index = 0;  // the journal's index of the case
  Case c;
  std::string message;
};

// A case still running when the kernel's budget ran out: stopped, not judged.
struct UnfinishedCase {
  Case c;
  std::filesystem::path case_file;
  double seconds = 0;  // how long it had run
  std::string why;
};

struct KernelReport {
  std::string name;
  std::filesystem::path spec_file;
  std::string backend;
  std::string expect;          // empty: none declared
  std::string isolation;       // "worker" or "in-process"
  std::string setup_error;     // spec, compile or machine problem: no cases ran
  int setup_exit = 0;          // its exit code (2 bad input, 3 infrastructure)
  int64_t cases_run = 0, cases_passed = 0, cases_skipped = 0;
  std::map<std::string, int64_t> skip_reasons;
  std::vector<CaseFailure> failures;
  std::vector<CaseInfraError> infrastructure;  // cases not run: the machine's fault, not the kernel's
  // Cases and set-ups that waited for device memory other processes held,
  // and the seconds they waited (exec/oom_retry.h).
  int64_t memory_waits = 0;
  double memory_wait_seconds = 0;
  std::optional<UnfinishedCase> unfinished;  // stopped at the budget's end
  // "SIGTERM" etc. when a stop request (core/stop.h) cut the kernel's run
  // short or came before it ran: its verdict is then "interrupted" unless a
  // case had already failed.
  std::string interrupted;
  double seconds = 0;
  // The caps its cases were drawn within (bytes): the harness's host memory
  // (--host-memory-limit) less what set-up took, and the backend's per case.
  double host_memory_limit = 0, host_memory_baseline = 0, memory_per_case = 0;
  // Largest |error| / allowed error over the passing cases: how close correct
  // results come to the tolerance (calibration of T, docs/tolerance.md).
  double worst_pass_ratio = 0;
  // compute-sanitizer replays (--sanitize); the note says why there were none.
  std::string sanitizer_tool, sanitizer_note;
  std::vector<SanitizerCheck> sanitizer;
  int sanitizer_errors() const;  // errors found over all replays

  // The first failing case decides the kernel's verdict; without one, an
  // interrupted run is "interrupted"; then any
  // sanitizer error makes it "sanitizer_error", then a case the machine
  // could not run "infrastructure_error" (as a set-up the machine failed).
  std::string verdict() const;
  // True when the verdict is what the spec's `expect` says (or pass if none).
  bool expect_met() const;
  // The machine failed this kernel (its set-up or a case): exit 3.
  bool infrastructure_failed() const { return verdict() == "infrastructure_error"; }
};

}  // namespace assay
