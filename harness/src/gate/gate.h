// The gate: one spec's kernel through the fixed sweep and seeded random cases,
// within a time and case budget; failing cases are saved with a repro line.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "case/case.h"
#include "exec/loader.h"
#include "exec/runner.h"
#include "report/reporter.h"
#include "spec/spec.h"

namespace assay {

class Op;

enum class Isolation { worker, in_process };

// With a worker on a GPU, small cases run planned (exec/executor.h,
// plannable), and GateOptions::batch of them share one exchange with the
// worker: the two processes take turns on the GPU once per exchange, and a
// turn costs more than such a case (docs/isolation.md, "Cost"). On the host
// there are no turns to save and the copies cost more than they save, so
// cases run call by call there unless batch is given.
inline constexpr size_t kBatchCases = 16;  // GateOptions::batch's cuda default; the speed bench measures it

struct GateOptions {
  Isolation isolation = Isolation::worker;  // host kernels; cuda ones run in process for now
  double timeout_s = 0;                     // per call; 0: scaled with the case's size
  size_t device_memory_limit = size_t(8) << 30;  // cuda worker: bytes a candidate may keep; 0: unchecked
  uint64_t seed = 1;
  std::optional<int64_t> max_cases;  // default: the sweep plus kDefaultRandomCases
  double budget_seconds = 60;        // per kernel
  int max_failures = 3;              // stop a kernel after this many failing cases
  std::optional<double> tolerance_scale;
  std::filesystem::path out_dir = "assay-out";
  LoaderOptions loader;
  std::filesystem::path corpus_dir = "corpus";  // replays corpus/<kernel name>/*.yaml before the sweep
  int shrink_attempts = 200;                    // cases spent shrinking a kernel's first failure; 0: none
  class Journal* journal = nullptr;             // record every case before and after it runs
  const struct ResumeState* resume = nullptr;   // cases an interrupted run already finished
  std::string sanitize;                         // compute-sanitizer tool for replays; empty: none
  int sanitize_samples = 2;                     // small passing cases replayed besides the failures
  std::optional<size_t> batch;                  // planned small cases per exchange (above); 0: call by call
  double host_memory_limit = 0;                 // bytes the harness's process may hold; 0: default_host_memory_limit()
};

inline constexpr int64_t kDefaultRandomCases = 200;

// Work and memory a backend takes on for one case; bigger cases are skipped.
struct CaseLimits {
  double max_work;   // m*n*k
  double max_bytes;
};
CaseLimits limits_for(const Backend& backend);

// The sweep's heavy cases (more than kHeavyCaseBytes of backend memory: the
// index-limit cases, GiBs each and seconds a call) moved behind the others
// from `from` on, cheapest first, the rest in their order: run before the
// random cases, so a budget-bound run covers every cheap case whatever the
// heavy ones cost (docs/cases.md, "Heavy cases come last").
inline constexpr double kHeavyCaseBytes = double(int64_t(2) << 30);
void heavy_cases_last(const Op& op, std::vector<Case>& cases, size_t from);

// Runs one kernel; never throws for the kernel's or the spec's faults (they
// land in the report), only InfraError when the backend itself breaks.
KernelReport run_gate(const Spec& spec, Backend& backend, const GateOptions& opt, Reporter& reporter);

// The runner for a kernel: a worker process (`isolate`, host kernels) or a
// direct call. Throws InputError when the kernel cannot be loaded, InfraError
// when the worker cannot set up the device (OutOfMemory when its memory is
// full: worth waiting for, exec/oom_retry.h).
std::unique_ptr<Runner> make_runner(const Spec& spec, Backend& backend, const LoadedKernel& kernel, bool isolate,
                                    const std::filesystem::path& log_dir,
                                    size_t device_memory_limit = size_t(8) << 30);

// Saves a failing case next to the others of its kernel; returns the file.
// `notes` (a shrunk case's, ShrinkResult::notes) go into its comment lines.
std::filesystem::path save_case(const std::filesystem::path& dir, const Spec& spec, const Case& c,
                                const CaseOutcome& o, int64_t index, const std::string& suffix = "",
                                const std::vector<std::string>& notes = {});
// The same under a name of the caller's choosing.
std::filesystem::path save_case_as(const std::filesystem::path& file, const Spec& spec, const Case& c,
                                   const CaseOutcome& o, const std::vector<std::string>& notes = {});
// A case its run's deadline stopped (no verdict), saved as
// case-NNNN-unfinished<suffix>.yaml with `note` as its first comment.
std::filesystem::path save_unfinished_case(const std::filesystem::path& dir, const Spec& spec, const Case& c,
                                           int64_t index, const std::string& suffix, const std::string& note);

}  // namespace assay
