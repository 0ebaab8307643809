// compute-sanitizer replays (issue #3): after a kernel's gate run, its failing
// cases and a few small passing ones are replayed by `assay repro --exact-alloc`
// (in process, each tensor exactly its own allocation: issue #13) under
// compute-sanitizer, so the tool sees the candidate's kernels and their
// stray accesses directly.
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
// memcheck's --padding: a write this far past a tensor is out of bounds even
// where the next allocation would begin (a 32-wide tile of f64 is 256 bytes).
inline constexpr int kSanitizerPaddingBytes = 1024;

// "" when compute-sanitizer can be run, else a message saying it cannot.
std::string sanitizer_unavailable();

// Replays each case with `tool`; cache_dir is passed on to `assay repro`.
std::vector<SanitizerCheck> sanitize_cases(const std::string& tool, const std::vector<std::filesystem::path>& cases,
                                           const std::filesystem::path& cache_dir, double timeout_s = 900);

// The command line of one replay: `program --tool tool ... SELF repro CASE --exact-alloc ...`.
std::vector<std::string> sanitizer_command(const std::string& program, const std::string& tool,
                                           const std::filesystem::path& self, const std::filesystem::path& case_file,
                                           const std::filesystem::path& cache_dir);

// The error count in a compute-sanitizer report ("ERROR SUMMARY: N errors").
int sanitizer_errors(const std::string& report_text);

}  // namespace assay
