// What `repro` and `shrink` share: one saved case, its spec, a backend, the
// compiled kernel and a runner, ready to run the case again.
#pragma once
#include <filesystem>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "backend/backend.h"
#include "case/case.h"
#include "exec/executor.h"
#include "exec/runner.h"
#include "spec/spec.h"

namespace assay::cli {

struct CaseSessionArgs {
  std::string case_file, spec, cache_dir;
  std::string isolation;  // "": worker, or in process with exact_alloc
  double tolerance_scale = 0, timeout = 0;
  bool exact_alloc = false;  // repro --exact-alloc (ExecOptions::exact_alloc)
  void add_to(CLI::App& app);  // the options both commands take
};

struct CaseSession {
  Case c;
  Spec spec;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Runner> runner;
  ExecOptions exec;
  // While other processes hold the device's memory, a case waits for it up
  // to kSessionOomWaitSeconds (exec/oom_retry.h).
  CaseOutcome run(const Case& x);
};
inline constexpr double kSessionOomWaitSeconds = 60;

// Throws InputError for a bad case or spec, or a case too large for the backend.
CaseSession open_case_session(const CaseSessionArgs& a);

// Writes A, B, C before and after, the reference and the bound as .npy files.
void dump_tensors(const std::filesystem::path& dir, const Case& c, const CaseTensors& t);

}  // namespace assay::cli
