// Runs the built `assay` binary in a scratch folder, for tests of the
// command line: exit codes, messages, files written.
#pragma once
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace assay::testing {

inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct CliResult {
  int code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line; its stdout and stderr together, and its exit code.
inline CliResult run_command(const std::string& cmd) {
  CliResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A fresh scratch folder, removed afterwards; commands run inside it.
struct Workdir {
  std::filesystem::path dir;
  Workdir() {
    std::random_device rd;
    dir = std::filesystem::temp_directory_path() / ("assay_test_cli_" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(dir);
  }
  ~Workdir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  CliResult run(const std::string& args) const {
    const std::string assay = (std::filesystem::path(ASSAY_BUILD_DIR) / "assay").string();
    return run_command("cd " + quote(dir.string()) + " && " + quote(assay) + " " + args);
  }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name, std::ios::binary) << text;
    return dir / name;
  }
};

}  // namespace assay::testing
