// Reporters turn gate progress and results into one output format each
// (console, JSON, JUnit). A new format touches nothing else.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "report/kernel_report.h"

namespace assay {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void kernel_started(const KernelReport&) {}
  virtual void case_done(const KernelReport&, const Case&, const CaseOutcome&) {}
  virtual void kernel_done(const KernelReport&) {}
  virtual void run_done(const std::vector<KernelReport>&) {}
};

// Forwards every event to several reporters.
class ReporterSet final : public Reporter {
 public:
  void add(std::unique_ptr<Reporter> r) { all_.push_back(std::move(r)); }
  void kernel_started(const KernelReport& k) override { for (auto& r : all_) r->kernel_started(k); }
  void case_done(const KernelReport& k, const Case& c, const CaseOutcome& o) override {
    for (auto& r : all_) r->case_done(k, c, o);
  }
  void kernel_done(const KernelReport& k) override { for (auto& r : all_) r->kernel_done(k); }
  void run_done(const std::vector<KernelReport>& ks) override { for (auto& r : all_) r->run_done(ks); }

 private:
  std::vector<std::unique_ptr<Reporter>> all_;
};

std::unique_ptr<Reporter> make_console_reporter(bool expect_mode, bool quiet);
std::unique_ptr<Reporter> make_json_reporter(std::filesystem::path file);
std::unique_ptr<Reporter> make_junit_reporter(std::filesystem::path file, bool expect_mode);

// Text made safe for XML content and attributes (JUnit files).
std::string xml_escape(std::string_view s);

}  // namespace assay
