// The run journal: an append-only JSON-lines file in the output folder. Each
// case is written (and flushed to disk) before it is launched and again with
// its verdict, so `kill -9` or a power cut loses no result and leaves the
// in-flight case on disk; `assay check --resume DIR` continues from it.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "case/case.h"
#include "exec/executor.h"

namespace assay {

struct FinishedCase {
  Case c;
  Verdict verdict = Verdict::pass;
  int call = 0;
  std::string detail;
  std::filesystem::path case_file;
};

// What an interrupted run had done, read back from its journal.
struct ResumeState {
  nlohmann::json args;  // the options the run was started with
  std::map<std::string, std::map<int64_t, FinishedCase>> finished;  // spec file -> case index -> result
  std::map<std::string, std::map<int64_t, Case>> in_flight;         // started, never finished
};

class Journal {
 public:
  // Starts a new journal (truncating an old one) or, with `append`, continues one.
  Journal(const std::filesystem::path& dir, const nlohmann::json& args, bool append);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  void case_started(const std::string& spec, int64_t index, const Case& c);
  void case_finished(const std::string& spec, int64_t index, const CaseOutcome& o,
                     const std::filesystem::path& case_file);

  static std::filesystem::path file_in(const std::filesystem::path& dir) { return dir / "journal.jsonl"; }
  // Throws InputError when the folder holds no readable journal.
  static ResumeState read(const std::filesystem::path& dir);

 private:
  void append(const nlohmann::json& line, bool sync);
  int fd_ = -1;
};

}  // namespace assay
