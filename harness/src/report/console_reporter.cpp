// Human summary on stdout: one line per kernel, details and repro lines for
// failures, a progress line every few seconds on long runs.
#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "report/reporter.h"

namespace assay {
namespace {

class ConsoleReporter final : public Reporter {
 public:
  ConsoleReporter(bool expect_mode, bool quiet) : expect_mode_(expect_mode), quiet_(quiet) {}

  void kernel_started(const KernelReport& k) override {
    last_ = start_ = std::chrono::steady_clock::now();
    if (!quiet_) fmt::print("[{}] {} ({})\n", k.backend, k.name, k.spec_file.string());
    std::fflush(stdout);
  }

  void case_done(const KernelReport& k, const Case&, const CaseOutcome&) override {
    auto now = std::chrono::steady_clock::now();
    if (quiet_ || now - last_ < std::chrono::seconds(5)) return;
    last_ = now;
    double s = std::chrono::duration<double>(now - start_).count();
    fmt::print("  ... {} cases, {} failed, {:.0f} s, {:.1f} cases/s\n", k.cases_run, k.failures.size(), s,
               k.cases_run / s);
    std::fflush(stdout);
  }

  void kernel_done(const KernelReport& k) override {
    std::string v = k.verdict();
    std::string mark = expect_mode_ ? (k.expect_met() ? "ok  " : "FAIL") : (v == "pass" ? "ok  " : "FAIL");
    std::string expect = expect_mode_ && !k.expect.empty() ? fmt::format(" (expected {})", k.expect) : "";
    fmt::print("{} {:<28} {:<20}{} {} cases, {} skipped, {:.2f} s", mark, k.name, v, expect, k.cases_run,
               k.cases_skipped, k.seconds);
    if (k.cases_passed > 0) fmt::print(", worst passing error {:.3g} of the tolerance", k.worst_pass_ratio);
    if (k.memory_waits > 0) fmt::print(", waited {:.1f} s for device memory", k.memory_wait_seconds);
    fmt::print("\n");
    if (!k.setup_error.empty()) fmt::print("     {}\n", k.setup_error);
    for (auto& e : k.infrastructure) fmt::print("     not run (infrastructure): {}\n       {}\n", describe(e.c), e.message);
    for (auto& [reason, n] : k.skip_reasons) fmt::print("     skipped {}: {}\n", n, reason);
    for (auto& f : k.failures) {
      fmt::print("     {} in call {}: {}\n", name(f.outcome.verdict), f.outcome.call, describe(f.c));
      fmt::print("       {}\n", f.outcome.detail);
      fmt::print("       __REPRO: {}\n", f.repro);
      if (!f.shrunk.case_file.empty())
        fmt::print("     shrunk: {}       __REPRO: assay repro {}\n", f.shrunk.explanation, f.shrunk.case_file.string());
      else if (!f.shrunk.explanation.empty())  // already as small as it gets; the notes still tell
        fmt::print("     shrunk: {}", f.shrunk.explanation);
    }
    if (k.unfinished)
      fmt::print("     unfinished at the budget's end: {} ({}, after {:.1f} s)\n       __REPRO: assay repro {}\n",
                 describe(k.unfinished->c), k.unfinished->why, k.unfinished->seconds,
                 k.unfinished->case_file.string());
    if (!k.sanitizer_note.empty()) fmt::print("     sanitize: {}\n", k.sanitizer_note);
    for (auto& s : k.sanitizer)
      fmt::print("     {} on {}: {}, report {}\n", k.sanitizer_tool, s.case_file.filename().string(),
                 s.timed_out ? "timed out" : s.errors < 0 ? "no summary (see report)" : fmt::format("{} errors", s.errors),
                 s.report.string());
    std::fflush(stdout);
  }

  void run_done(const std::vector<KernelReport>& ks) override {
    int ok = 0;
    for (auto& k : ks) ok += expect_mode_ ? k.expect_met() : k.verdict() == "pass";
    fmt::print("{} of {} kernels {}\n", ok, ks.size(), expect_mode_ ? "got their expected verdict" : "passed");
  }

 private:
  bool expect_mode_, quiet_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace

std::unique_ptr<Reporter> make_console_reporter(bool expect_mode, bool quiet) {
  return std::make_unique<ConsoleReporter>(expect_mode, quiet);
}

}  // namespace assay
