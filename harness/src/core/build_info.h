// Which build of assay this binary is, baked in when it was built
// (cmake/build_info.cmake): every result file records it, so a report says
// which assay made it wherever the command ran (issue #13).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace assay {

struct BuildInfo {
  const char* version;  // the project's version, e.g. "0.1"
  const char* commit;   // assay's short commit hash; "unknown" when not built from a git checkout
  int dirty;            // 1: the tree had local changes, 0: clean, -1: unknown
  const char* date;     // the build's date, YYYY-MM-DD (UTC)
};

const BuildInfo& build_info();  // in the generated build/generated/build_info.cpp

// "abc1234", "abc1234 (with local changes)" or "unknown".
std::string build_commit();
// "assay 0.1 (commit abc1234, clean, built 2026-12-01)": what `assay --version` prints.
std::string build_line();
// {"version", "commit", "dirty" (null when unknown), "built", "line"}: the
// "assay" field of the JSON reports.
nlohmann::json build_json();

}  // namespace assay
