// `assay check SPEC|DIR...`: the CI gate. Exit 0 when every kernel passes (or,
// with --expect, gets the verdict its spec expects), 1 when one does not,
// 2 on bad input, 3 when the machine cannot run what was asked.
#include <algorithm>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "backend/backend.h"
#include "cli/commands.h"
#include "core/deadline.h"
#include "core/stop.h"
#include "core/error.h"
#include "core/host_memory.h"
#include "exec/oom_retry.h"
#include "gate/gate.h"
#include "gate/sanitize.h"
#include "gate/journal.h"

#include <nlohmann/json.hpp>

namespace assay::cli {
namespace fs = std::filesystem;
namespace {

struct CheckArgs {
  std::vector<std::string> paths;
  std::string backend = "all";
  int64_t cases = -1;
  double budget = 60;
  uint64_t seed = 1;
  int max_failures = 3;
  double tolerance_scale = 0;
  std::string json, junit, out_dir = "assay-out", cache_dir;
  bool expect = false, quiet = false;
  std::string isolation = "worker";
  double timeout = 0;
  std::string resume;  // folder of an interrupted run
  std::string corpus = "corpus";
  std::string sanitize;  // compute-sanitizer tool; empty: none
  int sanitize_samples = 2;
  double device_memory_limit_gib = 8;
  double device_memory_share_gib = 0;  // 0: ASSAY_DEVICE_MEMORY_GIB or 80 % of the device's total
  int batch = -1;  // -1: the backend's default (gate/gate.h)
  int shrink_attempts = GateOptions{}.shrink_attempts;
  double host_memory_limit_gib = 0;  // 0: default_host_memory_limit()
};

// The journal keeps the run's options so that --resume needs nothing else
// (an option a journal predates takes its default).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CheckArgs, paths, backend, cases, budget, seed, max_failures, tolerance_scale, json,
                                   junit, out_dir, cache_dir, expect, quiet, isolation, timeout, corpus, sanitize,
                                   sanitize_samples, device_memory_limit_gib, device_memory_share_gib, batch,
                                   shrink_attempts, host_memory_limit_gib)

// Exit code of the whole run (worse_exit: bad input, then machine, then kernel).
int exit_code(const std::vector<KernelReport>& reports, bool expect_mode) {
  int code = exit_pass;
  for (auto& k : reports) {
    int c = !k.setup_error.empty()       ? k.setup_exit
            : k.infrastructure_failed() ? exit_infrastructure
            : (expect_mode ? k.expect_met() : k.verdict() == "pass") ? exit_pass : exit_kernel_failed;
    code = worse_exit(code, c);
  }
  return code;
}

int run_check(CheckArgs a) {
  // SIGTERM (a CI runner's time limit) or Ctrl-C: the kernel in flight stops
  // as at its budget's end, the rest are listed as not run, and the reports
  // are written before exiting 128 + the signal.
  install_stop_handlers();
  std::optional<ResumeState> resume;
  if (!a.resume.empty()) {
    const std::string dir = a.resume, json = a.json, junit = a.junit;
    resume = Journal::read(dir);
    try {
      a = resume->args.get<CheckArgs>();
      a.out_dir = dir;  // the folder may have moved since
      if (!json.empty()) a.json = json;  // reports may go elsewhere this time
      if (!junit.empty()) a.junit = junit;
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("{}: unreadable run options: {}", Journal::file_in(a.resume).string(), e.what()));
    }
    size_t done = 0, in_flight = 0;
    for (auto& [spec, cases] : resume->finished) done += cases.size();
    for (auto& [spec, cases] : resume->in_flight) in_flight += cases.size();
    if (!a.quiet) fmt::print("resuming {}: {} cases finished, {} in flight (run again)\n", a.out_dir, done, in_flight);
  }
  Journal journal(a.out_dir, a, resume.has_value());
  std::optional<BackendKind> only;
  if (a.backend == "auto") only = cuda_available() ? BackendKind::cuda : BackendKind::host;
  else if (a.backend == "cuda") only = BackendKind::cuda;
  else if (a.backend == "host") only = BackendKind::host;
  if (only && a.backend == "auto" && !a.quiet)
    fmt::print("backend auto: {}\n", *only == BackendKind::cuda ? "cuda (a GPU is present)" : "host (no CUDA GPU)");

  GateOptions opt;
  opt.seed = a.seed;
  if (a.cases >= 0) opt.max_cases = a.cases;
  opt.budget_seconds = a.budget;
  opt.max_failures = a.max_failures;
  if (a.tolerance_scale > 0) opt.tolerance_scale = a.tolerance_scale;
  opt.out_dir = a.out_dir;
  opt.loader.cache_dir = a.cache_dir;
  opt.isolation = a.isolation == "in-process" ? Isolation::in_process : Isolation::worker;
  opt.timeout_s = a.timeout;
  opt.journal = &journal;
  opt.corpus_dir = a.corpus;
  if (resume) opt.resume = &*resume;
  opt.sanitize = a.sanitize, opt.sanitize_samples = a.sanitize_samples;
  opt.device_memory_limit = size_t(a.device_memory_limit_gib * double(1 << 30));
  if (a.batch >= 0) opt.batch = size_t(a.batch);
  opt.shrink_attempts = a.shrink_attempts;
  opt.host_memory_limit = a.host_memory_limit_gib > 0 ? a.host_memory_limit_gib * double(size_t(1) << 30)
                                                      : default_host_memory_limit();
  if (!a.sanitize.empty())
    if (std::string why = sanitizer_unavailable(); !why.empty()) fmt::print("--sanitize {}: {}\n", a.sanitize, why);

  ReporterSet reporters;
  reporters.add(make_console_reporter(a.expect, a.quiet));
  if (!a.json.empty()) reporters.add(make_json_reporter(a.json));
  if (!a.junit.empty()) reporters.add(make_junit_reporter(a.junit, a.expect));

  std::map<BackendKind, std::unique_ptr<Backend>> backends;
  std::vector<KernelReport> reports;
  for (const fs::path& file : collect_spec_files(a.paths)) {
    KernelReport failed_setup;
    failed_setup.name = file.stem().string();
    failed_setup.spec_file = file;
    if (stop_requested()) {  // not run: listed, so that no kernel silently drops out of the reports
      failed_setup.interrupted = stop_signal_name();
      reporters.kernel_started(failed_setup);
      reporters.kernel_done(failed_setup);
      reports.push_back(failed_setup);
      continue;
    }
    try {
      Spec spec = load_spec(file);
      if (only && spec.backend != *only) continue;
      failed_setup.name = spec.name, failed_setup.backend = name(spec.backend), failed_setup.expect = spec.expect;
      auto& backend = backends[spec.backend];
      if (!backend) {
        OomRetry wait;  // this process's context on a full device: waited for like a worker's
        wait.deadline = Deadline::in(a.budget).at;
        backend = wait.run([&] {
          return make_backend(spec.backend, size_t(a.device_memory_share_gib * double(size_t(1) << 30)));
        });
        if (spec.backend == BackendKind::cuda) opt.loader.cuda_arch = cuda_arch();
        if (!a.quiet)  // the caps every case is drawn within
          fmt::print("limits: host memory {} for this process (--host-memory-limit); {}; each kernel within "
                     "--budget {:g} s + {:g} s\n",
                     gib(opt.host_memory_limit),
                     spec.backend == BackendKind::cuda
                         ? fmt::format("device memory {} a case (ASSAY_DEVICE_MEMORY_GIB caps it)",
                                       gib(double(backend->memory_budget())))
                         : fmt::format("host backend buffers {} a case", gib(double(backend->memory_budget()))),
                     opt.budget_seconds, deadline_slack(opt.budget_seconds));
      }
      KernelReport k = run_gate(spec, *backend, opt, reporters);
      if (stop_requested()) k.interrupted = stop_signal_name();
      reports.push_back(std::move(k));
      continue;
    } catch (const InputError& e) {
      failed_setup.setup_error = e.what(), failed_setup.setup_exit = exit_bad_input;
    } catch (const InfraError& e) {
      failed_setup.setup_error = e.what(), failed_setup.setup_exit = exit_infrastructure;
    }
    reporters.kernel_started(failed_setup);
    reporters.kernel_done(failed_setup);
    reports.push_back(failed_setup);
  }
  reporters.run_done(reports);
  if (stop_requested()) {
    fmt::print(stderr, "assay check: stopped by {}: the reports hold the {} kernel(s) listed, finished or not\n",
               stop_signal_name(), reports.size());
    return 128 + stop_signal();
  }
  return exit_code(reports, a.expect);
}

}  // namespace

Command add_check(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* c = app.add_subcommand("check", "gate kernels: sweep and random cases against the FP64 reference");
  c->add_option("specs", args->paths, "spec files or folders of specs")->required();
  c->add_option("--backend", args->backend, "all | auto (cuda if a GPU is present, else host) | cuda | host")
      ->check(CLI::IsMember({"all", "auto", "cuda", "host"}));
  c->add_option("--cases", args->cases, "at most this many cases per kernel (default: sweep + 200 random)")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 40));
  c->add_option("--budget", args->budget, "seconds per kernel (default 60)")->check(CLI::PositiveNumber);
  c->add_option("--seed", args->seed, "seed of the sweep and random cases (default 1)");
  c->add_option("--max-failures", args->max_failures, "failing cases kept per kernel before it stops (default 3)")
      ->check(CLI::Range(1, 1000000));
  c->add_option("--tolerance-scale", args->tolerance_scale, "T in the tolerance bound (default 2)")
      ->check(CLI::PositiveNumber);
  c->add_option("--json", args->json, "write a JSON report");
  c->add_option("--junit", args->junit, "write a JUnit XML report");
  c->add_option("--out", args->out_dir, "folder for failing case files (default assay-out)");
  c->add_option("--cache-dir", args->cache_dir, "compiled-kernel cache (default ~/.cache/assay)");
  c->add_option("--isolation", args->isolation,
                 "worker (default: candidates run in a separate process) | in-process (faster, unguarded)")
      ->check(CLI::IsMember({"worker", "in-process"}));
  c->add_option("--timeout", args->timeout, "seconds one call may take before it is a hang (default: scaled)")
      ->check(CLI::PositiveNumber);
  c->add_option("--sanitize", args->sanitize,
                 "replay failing cases and a few passing ones under compute-sanitizer with this tool")
      ->check(CLI::IsMember({"memcheck", "racecheck", "initcheck", "synccheck"}));
  c->add_option("--sanitize-samples", args->sanitize_samples, "passing cases replayed per kernel (default 2)")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--device-memory-limit", args->device_memory_limit_gib,
                 "GiB of device memory a cuda candidate may keep between calls beyond its case's buffers "
                 "(measured per process through NVML; 0: unchecked; default 8)")
      ->check(CLI::NonNegativeNumber);
  c->add_option("--device-memory-share", args->device_memory_share_gib,
                 "GiB of device memory this run (the harness and its workers, measured per process through NVML) "
                 "may hold; cases larger are not drawn (default: ASSAY_DEVICE_MEMORY_GIB, else 80% of the "
                 "device's total memory)")
      ->check(CLI::PositiveNumber);
  c->add_option("--batch", args->batch,
                 fmt::format("with a worker, small cases planned whole and sent to it this many at a time; 0: "
                             "call by call (default {} on cuda, 0 on the host)", kBatchCases))
      ->check(CLI::Range(0, 256));
  c->add_option("--shrink-attempts", args->shrink_attempts,
                 "cases spent shrinking each kernel's first failure; 0: none (default 200)")
      ->check(CLI::Range(0, 100000));
  c->add_option("--host-memory-limit", args->host_memory_limit_gib,
                 "GiB of host memory this process may hold: cases that would need more are skipped "
                 "(default: the smaller of 16 and a quarter of RAM)")
      ->check(positive_gib());
  c->add_flag("--expect", args->expect, "succeed when each kernel gets the verdict its spec expects");
  c->add_flag("--quiet", args->quiet, "only the per-kernel summary");
  c->add_option("--corpus", args->corpus, "regression corpus: DIR/<kernel name>/*.yaml replay first (default corpus)");
  c->add_option("--resume", args->resume, "continue the interrupted run whose output folder this is")
      ->check(CLI::ExistingDirectory);
  c->get_option("specs")->required(false);
  return [args] {
    if (args->paths.empty() && args->resume.empty()) throw InputError("check: give spec files or folders, or --resume DIR");
    return run_check(*args);
  };
}

}  // namespace assay::cli
