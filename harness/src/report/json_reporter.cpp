// Machine-readable report: every kernel, its counts, and every failure with
// its case, statistics, case file and repro command.
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/build_info.h"
#include "core/error.h"
#include "core/host_memory.h"
#include "core/stop.h"
#include "report/reporter.h"

namespace assay {
namespace {

using nlohmann::json;

json failure_json(const CaseFailure& f) {
  const CompareStats& s = f.outcome.stats;
  json bad = json::array();
  for (auto& e : s.first_bad)
    bad.push_back({{"tensor", e.tensor >= 0 && size_t(e.tensor) < f.c.tensors.size() ? f.c.tensors[size_t(e.tensor)].name : ""},
                   {"row", e.row}, {"col", e.col}, {"expected", e.expected}, {"got", e.got}, {"ulps", e.ulps},
                   {"bound_ratio", e.ratio}});
  return {{"verdict", name(f.outcome.verdict)}, {"call", f.outcome.call}, {"case", describe(f.c)},
          {"detail", f.outcome.detail}, {"case_file", f.case_file.string()}, {"repro", f.repro},
          {"bad_elements", s.bad}, {"max_ulps", s.max_ulps}, {"max_bound_ratio", s.max_ratio},
          {"first_bad", bad}, {"shrunk_case_file", f.shrunk.case_file.string()},
          {"shrunk_explanation", f.shrunk.explanation}};
}

json unfinished_json(const KernelReport& k) {
  if (!k.unfinished) return nullptr;
  const UnfinishedCase& u = *k.unfinished;
  json dims = json::object();  // the case's sizes by name (GEMM: m, n, k)
  for (auto& z : u.c.sizes) dims[z.name] = z.value;
  return {{"case", describe(u.c)}, {"dims", dims},
          {"case_file", u.case_file.string()}, {"seconds", u.seconds}, {"why", u.why}};
}

class JsonReporter final : public Reporter {
 public:
  explicit JsonReporter(std::filesystem::path file) : file_(std::move(file)) {}
  void run_done(const std::vector<KernelReport>& ks) override {
    json kernels = json::array();
    for (auto& k : ks) {
      json failures = json::array(), sanitizer = json::array();
      for (auto& f : k.failures) failures.push_back(failure_json(f));
      json infrastructure = json::array();
      for (auto& e : k.infrastructure)
        infrastructure.push_back({{"index", e.index}, {"case", describe(e.c)}, {"message", e.message}});
      for (auto& s : k.sanitizer)
        sanitizer.push_back({{"tool", k.sanitizer_tool}, {"case_file", s.case_file.string()},
                             {"report", s.report.string()}, {"errors", s.errors}, {"timed_out", s.timed_out}});
      kernels.push_back({{"name", k.name}, {"spec", k.spec_file.string()}, {"backend", k.backend},
                         {"verdict", k.verdict()}, {"expect", k.expect}, {"expect_met", k.expect_met()},
                         {"setup_error", k.setup_error}, {"cases_run", k.cases_run},
                         {"cases_passed", k.cases_passed}, {"cases_skipped", k.cases_skipped},
                         {"skip_reasons", k.skip_reasons}, {"seconds", k.seconds}, {"cases_per_second", k.seconds > 0 ? k.cases_run / k.seconds : 0.0},
                         {"worst_pass_bound_ratio", k.worst_pass_ratio}, {"failures", failures},
                         {"infrastructure_errors", infrastructure}, {"memory_waits", k.memory_waits},
                         {"memory_wait_seconds", k.memory_wait_seconds},
                         {"sanitizer", sanitizer}, {"sanitizer_note", k.sanitizer_note},
                         {"unfinished_case", unfinished_json(k)}, {"interrupted", k.interrupted},
                         {"host_memory", {{"limit_bytes", k.host_memory_limit}, {"baseline_bytes", k.host_memory_baseline}}},
                         {"memory_per_case_bytes", k.memory_per_case}});
    }
    std::ofstream out(file_);
    out << json{{"tool", "assay"},
                {"build", build_json()},
                {"interrupted", stop_signal_name()},
                {"kernels", kernels},
                {"peak_rss_bytes", peak_resident_bytes()}}
               .dump(2)
        << "\n";
    if (!out) throw InfraError("cannot write " + file_.string());
  }

 private:
  std::filesystem::path file_;
};

}  // namespace

std::unique_ptr<Reporter> make_json_reporter(std::filesystem::path file) {
  return std::make_unique<JsonReporter>(std::move(file));
}

}  // namespace assay
