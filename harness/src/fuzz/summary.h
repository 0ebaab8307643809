// One summary from the jobs of a `--jobs`/`--gpus` campaign: each job writes
// its own OUT/<kernel>/job-<j>/fuzz-summary.json (fuzz/campaign.cpp), and the
// parent merges them into OUT/<kernel>/fuzz-summary.json.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

namespace assay::fuzz {

struct JobResult {
  int job = 0;
  int exit_code = 0;         // the job's exit status; -signal when it died
  nlohmann::json summary;    // null when the job wrote none
};

// Cases add up; cases/s is over `wall_seconds` (all jobs together);
// failures are deduplicated by signature, the earliest kept; time to first
// failure is the earliest of any job. Jobs that died are listed, their
// results up to their last written summary kept; so are each job's case
// stopped at the end (`unfinished_cases`) and early stops (`stopped`).
nlohmann::json merge_summaries(const std::vector<JobResult>& jobs, double wall_seconds);

}  // namespace assay::fuzz
