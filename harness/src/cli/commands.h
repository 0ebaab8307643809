// The subcommands of `assay`, each registered on the CLI11 app and run after
// parsing. Each returns the process exit code (core/error.h).
#pragma once
#include <functional>
#include <string>

#include <CLI/CLI.hpp>

namespace assay::cli {

using Command = std::function<int()>;

Command add_check(CLI::App& app);
Command add_repro(CLI::App& app);
Command add_shrink(CLI::App& app);
Command add_fuzz(CLI::App& app);
Command add_corpus(CLI::App& app);
Command add_zoo(CLI::App& app);
Command add_bench(CLI::App& app);

// --host-memory-limit's check: a positive number of GiB, said plainly when not.
inline CLI::Validator positive_gib() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        double g = 0;
        size_t used = 0;
        try {
          g = std::stod(v, &used);
        } catch (...) {
        }
        if (used == v.size() && g > 0 && g < 1e6) return {};
        return "expected a positive number of GiB (e.g. 16, 0.5), got '" + v + "'";
      },
      "GIB");
}

}  // namespace assay::cli
