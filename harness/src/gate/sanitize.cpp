#include "gate/sanitize.h"

#include <fstream>
#include <regex>
#include <sstream>

#include "core/subprocess.h"

namespace assay {
namespace fs = std::filesystem;

namespace {

std::string sanitizer_program() {
  std::string p = find_program("compute-sanitizer");
  if (p.empty() && fs::exists("/usr/local/cuda/bin/compute-sanitizer")) p = "/usr/local/cuda/bin/compute-sanitizer";
  return p;
}

}  // namespace

std::string sanitizer_unavailable() {
  if (!sanitizer_program().empty()) return "";
  return "compute-sanitizer is not installed (not on PATH nor in /usr/local/cuda/bin): no sanitizer replays";
}

int sanitizer_errors(const std::string& text) {
  static const std::regex summary(R"(ERROR SUMMARY: (\d+) error)");
  int errors = -1;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), summary); it != std::sregex_iterator(); ++it)
    errors = std::stoi((*it)[1].str());
  return errors;
}

// In process (--exact-alloc implies it): the tool must see the candidate's
// launches, not a worker's. Exact allocations: the gate's guard zones and
// 2 MiB blocks would hold an overrun inside memory the tool counts as valid;
// the padding puts what lies past each allocation out of bounds too.
std::vector<std::string> sanitizer_command(const std::string& program, const std::string& tool, const fs::path& self,
                                           const fs::path& case_file, const fs::path& cache_dir) {
  std::vector<std::string> argv = {program, "--tool", tool, "--error-exitcode", "86", "--print-limit", "20"};
  if (tool == "memcheck")
    argv.insert(argv.end(), {"--leak-check", "full", "--padding", std::to_string(kSanitizerPaddingBytes)});
  argv.insert(argv.end(), {self.string(), "repro", case_file.string(), "--exact-alloc"});
  if (!cache_dir.empty()) argv.insert(argv.end(), {"--cache-dir", cache_dir.string()});
  return argv;
}

std::vector<SanitizerCheck> sanitize_cases(const std::string& tool, const std::vector<fs::path>& cases,
                                           const fs::path& cache_dir, double timeout_s) {
  std::vector<SanitizerCheck> checks;
  const std::string program = sanitizer_program();
  if (program.empty()) return checks;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  for (const fs::path& file : cases) {
    SanitizerCheck c;
    c.case_file = file;
    c.report = fs::path(file).replace_extension("sanitizer-" + tool + ".txt");
    ProcessResult r = run_process(sanitizer_command(program, tool, self, file, cache_dir), c.report, timeout_s);
    c.timed_out = r.timed_out;
    std::ifstream in(c.report);
    std::stringstream text;
    text << in.rdbuf();
    c.errors = r.started ? sanitizer_errors(text.str()) : -1;
    if (!r.started) std::ofstream(c.report, std::ios::app) << r.error << "\n";
    checks.push_back(c);
  }
  return checks;
}

}  // namespace assay
