#include "fuzz/summary.h"

#include <algorithm>
#include <map>

#include "core/build_info.h"

namespace assay::fuzz {

nlohmann::json merge_summaries(const std::vector<JobResult>& jobs, double wall_seconds) {
  int64_t cases = 0, rejected = 0, infrastructure = 0;
  std::map<std::string, nlohmann::json> first_by_signature;
  nlohmann::json per_job = nlohmann::json::array(), died = nlohmann::json::array();
  nlohmann::json unfinished = nlohmann::json::array(), stopped = nlohmann::json::array();
  nlohmann::json merged = nlohmann::json::object();
  for (const JobResult& r : jobs) {
    const nlohmann::json& s = r.summary;
    const bool crashed = r.exit_code < 0 || r.exit_code > 1;
    if (crashed) died.push_back({{"job", r.job}, {"exit", r.exit_code}});
    if (!s.is_object()) continue;
    if (merged.empty()) merged = {{"kernel", s.value("kernel", "")}, {"spec", s.value("spec", "")},
                                  {"features", s.value("features", true)}};
    cases += s.value("cases", int64_t(0));
    rejected += s.value("rejected_inputs", int64_t(0));
    infrastructure += s.value("infrastructure_errors", int64_t(0));
    per_job.push_back({{"job", r.job}, {"cases", s.value("cases", int64_t(0))},
                       {"cases_per_s", s.value("cases_per_s", 0.0)}, {"exit", r.exit_code},
                       {"distinct_failures", s.value("distinct_failures", 0)}});
    // Cases stopped at the end, and early stops, stay on record with their job.
    if (s.contains("unfinished_case") && s["unfinished_case"].is_object()) {
      nlohmann::json u = s["unfinished_case"];
      u["job"] = r.job;
      unfinished.push_back(u);
    }
    if (s.contains("stopped") && s["stopped"].is_string()) stopped.push_back({{"job", r.job}, {"why", s["stopped"]}});
    for (nlohmann::json f : s.value("failures", nlohmann::json::array())) {
      f["job"] = r.job;
      auto [it, fresh] = first_by_signature.emplace(f.value("signature", ""), f);
      if (!fresh && f.value("seconds", 0.0) < it->second.value("seconds", 0.0)) it->second = f;
    }
  }
  nlohmann::json failures = nlohmann::json::array();
  for (auto& [sig, f] : first_by_signature) failures.push_back(f);
  std::sort(failures.begin(), failures.end(),
            [](const nlohmann::json& a, const nlohmann::json& b) { return a["seconds"] < b["seconds"]; });
  const double per_s = wall_seconds > 0 ? double(cases) / wall_seconds : 0.0;
  merged["build"] = build_json();  // the parent's: the jobs run its own binary
  merged["jobs"] = jobs.size();
  merged["seconds"] = wall_seconds;
  merged["cases"] = cases;
  merged["cases_per_second"] = per_s;
  merged["cases_per_s"] = per_s;
  merged["rejected_inputs"] = rejected;
  merged["infrastructure_errors"] = infrastructure;
  merged["distinct_failures"] = failures.size();
  merged["first_failure_seconds"] = failures.empty() ? -1.0 : failures[0]["seconds"].get<double>();
  merged["time_to_first_failure_s"] = failures.empty() ? nlohmann::json() : failures[0]["seconds"];
  merged["shrink_seconds"] = failures.empty() ? nlohmann::json() : failures[0].value("shrink_seconds", nlohmann::json());
  merged["failures"] = failures;
  merged["per_job"] = per_job;
  merged["jobs_died"] = died;
  merged["unfinished_cases"] = unfinished;
  merged["stopped"] = stopped;
  return merged;
}

}  // namespace assay::fuzz
