#include "gate/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "core/error.h"

namespace assay {
namespace fs = std::filesystem;
using nlohmann::json;

Journal::Journal(const fs::path& dir, const json& args, bool append_to_old) {
  fs::create_directories(dir);
  const fs::path file = file_in(dir);
  fd_ = open(file.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | (append_to_old ? 0 : O_TRUNC), 0644);
  if (fd_ < 0) throw InfraError(fmt::format("cannot open {}: {}", file.string(), std::strerror(errno)));
  if (!append_to_old) {
    append(json{{"event", "run"}, {"args", args}}, true);
  } else if (off_t size = lseek(fd_, 0, SEEK_END); size > 0) {
    // A run killed mid-write leaves a torn last line: end it, so that it
    // stays one unreadable line and does not swallow the next one.
    char last = '\n';
    if (pread(fd_, &last, 1, size - 1) == 1 && last != '\n' && write(fd_, "\n", 1) != 1)
      throw InfraError(fmt::format("writing {}: {}", file.string(), std::strerror(errno)));
  }
}

Journal::~Journal() {
  if (fd_ >= 0) {
    fdatasync(fd_);
    close(fd_);
  }
}

void Journal::append(const json& line, bool sync) {
  std::string text = line.dump() + "\n";  // one write: lines never interleave or tear mid-way
  for (size_t done = 0; done < text.size();) {
    ssize_t n = write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw InfraError(fmt::format("writing the journal: {}", std::strerror(errno)));
    done += size_t(n);
  }
  if (sync) fdatasync(fd_);  // the in-flight case must survive a power cut
}

void Journal::case_started(const std::string& spec, int64_t index, const Case& c) {
  append(json{{"event", "start"}, {"spec", spec}, {"index", index}, {"case", to_yaml(c)}}, true);
}

void Journal::case_finished(const std::string& spec, int64_t index, const CaseOutcome& o, const fs::path& case_file) {
  append(json{{"event", "end"}, {"spec", spec}, {"index", index}, {"verdict", name(o.verdict)}, {"call", o.call},
              {"detail", o.detail}, {"case_file", case_file.string()}},
         false);
}

ResumeState Journal::read(const fs::path& dir) {
  const fs::path file = file_in(dir);
  std::ifstream in(file);
  if (!in) throw InputError(fmt::format("{}: no journal to resume from", file.string()));
  ResumeState state;
  std::string text;
  int line_no = 0;
  while (std::getline(in, text)) {
    ++line_no;
    json line = json::parse(text, nullptr, false);
    if (line.is_discarded() || !line.is_object()) {
      // A line torn by a kill mid-write (only ever the last line of a run):
      // its case counts as not finished and runs again.
      if (line_no == 1) throw InputError(fmt::format("{}:1: not a journal", file.string()));
      continue;
    }
    const std::string event = line.value("event", "");
    if (event == "run") {
      state.args = line.value("args", json::object());
      continue;
    }
    const std::string spec = line.value("spec", "");
    const int64_t index = line.value("index", int64_t(-1));
    if (event == "start") {
      state.in_flight[spec][index] = parse_case_yaml(line.value("case", ""), file.string()).c;
    } else if (event == "end") {
      FinishedCase f;
      auto started = state.in_flight[spec].find(index);
      if (started != state.in_flight[spec].end()) {
        f.c = started->second;
        state.in_flight[spec].erase(started);
      }
      f.verdict = parse_verdict(line.value("verdict", "")).value_or(Verdict::pass);
      f.call = line.value("call", 0);
      f.detail = line.value("detail", "");
      f.case_file = line.value("case_file", "");
      state.finished[spec][index] = f;
    }
  }
  if (state.args.is_null()) throw InputError(fmt::format("{}: the journal has no run header", file.string()));
  return state;
}

}  // namespace assay
