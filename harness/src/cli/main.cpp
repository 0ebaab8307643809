// assay: differential testing and fuzzing of GPU kernels.
#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/build_info.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"assay: differential testing of GPU kernels against FP64 references"};
  app.require_subcommand(1);
  app.set_version_flag("--version", assay::build_line(), "print which build of assay this is and exit");
  auto check = assay::cli::add_check(app);
  auto repro = assay::cli::add_repro(app);
  auto shrink = assay::cli::add_shrink(app);
  auto fuzz = assay::cli::add_fuzz(app);
  auto corpus = assay::cli::add_corpus(app);
  auto zoo = assay::cli::add_zoo(app);
  auto bench = assay::cli::add_bench(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : assay::exit_bad_input;
  }
  try {
    if (app.got_subcommand("check")) return check();
    if (app.got_subcommand("shrink")) return shrink();
    if (app.got_subcommand("fuzz")) return fuzz();
    if (app.got_subcommand("corpus")) return corpus();
    if (app.got_subcommand("zoo")) return zoo();
    if (app.got_subcommand("bench")) return bench();
    return repro();
  } catch (const assay::InputError& e) {
    fmt::print(stderr, "assay: {}\n", e.what());
    return assay::exit_bad_input;
  } catch (const assay::InfraError& e) {
    fmt::print(stderr, "assay: infrastructure: {}\n", e.what());
    return assay::exit_infrastructure;
  } catch (const std::exception& e) {
    fmt::print(stderr, "assay: internal error: {}\n", e.what());
    return assay::exit_infrastructure;
  }
}
