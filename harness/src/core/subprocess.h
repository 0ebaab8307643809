// Runs a command with its output captured in a file and a wall-clock limit:
// for tools the harness drives (compute-sanitizer replays), never candidates.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace assay {

struct ProcessResult {
  bool started = false;  // false: the program could not be run (why in `error`)
  bool timed_out = false;
  int exit_code = -1;    // when it exited; -1 when killed by a signal
  std::string error;
};

// argv[0] is looked up in PATH. stdout and stderr both go to `output`.
ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& output,
                          double timeout_s);

// The program's full path if it is on PATH (or given with a slash and exists).
std::string find_program(const std::string& name);

}  // namespace assay
