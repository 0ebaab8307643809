#include "fuzz/jobs.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/error.h"

namespace assay::fuzz {

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw InfraError("cannot find the assay executable (/proc/self/exe): " + ec.message());
  return p.string();
}

void die_with_parent(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) std::_Exit(exit_infrastructure);  // it died before the line above
}

std::vector<int> run_jobs(const std::string& exe, const std::vector<JobPlan>& plans) {
  std::vector<pid_t> pids;
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t self = getpid();
  for (const JobPlan& p : plans) {
    std::vector<std::string> argv_s = {exe};
    argv_s.insert(argv_s.end(), p.args.begin(), p.args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid < 0) throw InfraError("fork failed");
    if (pid == 0) {
      die_with_parent(self);  // kept across exec
      if (!p.gpu.empty()) setenv("CUDA_VISIBLE_DEVICES", p.gpu.c_str(), 1);
      execv(exe.c_str(), argv.data());
      std::perror("assay fuzz: exec");
      std::_Exit(exit_infrastructure);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t pid : pids) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1);
  }
  return codes;
}

std::vector<std::string> parse_gpu_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    std::string id = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
      throw InputError("--gpus: expected a list of GPU indices like 0,1,2, got '" + s + "'");
    out.push_back(id);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace assay::fuzz
