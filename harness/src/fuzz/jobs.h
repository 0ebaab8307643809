// `assay fuzz --jobs N` / `--gpus LIST`: campaigns as separate processes
// (fork + exec of assay itself), so a job that dies takes only itself down.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace assay::fuzz {

struct JobPlan {
  std::vector<std::string> args;  // assay's arguments, without argv[0]
  std::string gpu;                // CUDA_VISIBLE_DEVICES for this job; empty: inherited
};

// This process's executable (to start jobs of the same build).
std::string self_executable();

// In a campaign process just forked from `parent`: it gets SIGTERM when the
// parent dies, so a scheduler that kills `assay fuzz` does not leave its
// campaigns running (they keep their summary file up to date).
void die_with_parent(pid_t parent);

// Starts every job at once, waits for all; their exit codes in order
// (-signal for a job killed by a signal).
std::vector<int> run_jobs(const std::string& exe, const std::vector<JobPlan>& plans);

// "0,1,3" -> {"0", "1", "3"}; InputError on anything but non-negative integers.
std::vector<std::string> parse_gpu_list(const std::string& s);

}  // namespace assay::fuzz
