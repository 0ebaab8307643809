// The subcommands of `assay`, each registered on the CLI11 app and run after
// parsing. Each returns the process exit code (core/error.h).
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace assay::cli {

using Command = std::function<int()>;

Command add_check(CLI::App& app);
Command add_repro(CLI::App& app);
Command add_shrink(CLI::App& app);
Command add_fuzz(CLI::App& app);
Command add_corpus(CLI::App& app);
Command add_zoo(CLI::App& app);

}  // namespace assay::cli
