// compute-sanitizer replays (issue #3): after a kernel's gate run, its failing
// cases and a few small passing ones are replayed by `assay repro` in process
// under compute-sanitizer, so the tool sees the candidate's kernels directly.
// Each replay's report is kept next to its case; any error fails the gate.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace assay {

struct SanitizerCheck {
  std::filesystem::path case_file;
  std::filesystem::path report;  // compute-sanitizer's output
  int errors = 0;                // from its ERROR SUMMARY; -1 when it printed none
  bool timed_out = false;
};

inline constexpr const char* kSanitizerTools[] = {"memcheck", "racecheck", "initcheck", "synccheck"};

// "" when compute-sanitizer can be run, else a message saying it cannot.
std::string sanitizer_unavailable();

// Replays each case with `tool`; cache_dir is passed on to `assay repro`.
std::vector<SanitizerCheck> sanitize_cases(const std::string& tool, const std::vector<std::filesystem::path>& cases,
                                           const std::filesystem::path& cache_dir, double timeout_s = 900);

// The error count in a compute-sanitizer report ("ERROR SUMMARY: N errors").
int sanitizer_errors(const std::string& report_text);

}  // namespace assay
