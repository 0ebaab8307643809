#include "core/build_info.h"

#include <fmt/format.h>

namespace assay {

std::string build_commit() {
  const BuildInfo& b = build_info();
  return b.dirty == 1 ? fmt::format("{} (with local changes)", b.commit) : std::string(b.commit);
}

std::string build_line() {
  const BuildInfo& b = build_info();
  const char* tree = b.dirty == 1 ? ", with local changes" : b.dirty == 0 ? ", clean" : "";
  return fmt::format("assay {} (commit {}{}, built {})", b.version, b.commit, tree, b.date);
}

nlohmann::json build_json() {
  const BuildInfo& b = build_info();
  return {{"version", b.version},
          {"commit", b.commit},
          {"dirty", b.dirty < 0 ? nlohmann::json() : nlohmann::json(b.dirty == 1)},
          {"built", b.date},
          {"line", build_line()}};
}

}  // namespace assay
