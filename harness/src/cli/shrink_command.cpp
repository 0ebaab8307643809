// `assay shrink CASE.yaml [--out DIR]`: the smallest case that still fails the
// same way, saved with its .npy tensors and an explanation of what matters.
#include <fmt/format.h>

#include "cli/case_session.h"
#include "cli/commands.h"
#include "core/error.h"
#include "gate/gate.h"
#include "ops/op.h"
#include "shrink/shrinker.h"

namespace assay::cli {
namespace fs = std::filesystem;
namespace {

struct ShrinkArgs : CaseSessionArgs {
  std::string out;
  int attempts = 400;
};

int run_shrink(const ShrinkArgs& a) {
  CaseSession s = open_case_session(a);
  CaseOutcome first = s.run(s.c);
  if (first.verdict == Verdict::pass) {
    fmt::print("{}: the case passes; nothing to shrink\n", a.case_file);
    return exit_pass;
  }
  ShrinkResult r = shrink(op_of(s.spec), s.spec, s.c, first, [&](const Case& x) { return s.run(x); }, a.attempts);
  const fs::path dir = a.out.empty() ? fs::path(a.case_file).parent_path() : fs::path(a.out);
  const std::string stem = fs::path(a.case_file).stem().string() + "-shrunk";
  fs::path named = save_case_as(dir / (stem + ".yaml"), s.spec, r.shrunk, r.outcome, r.notes);
  s.exec.keep_tensors = true;
  CaseOutcome dumped = s.run(r.shrunk);
  if (!dumped.tensors.before.empty()) dump_tensors(dir / stem, r.shrunk, dumped.tensors);
  fmt::print("{}", explain(r));
  fmt::print("wrote {} (and its tensors in {})\n__REPRO: assay repro {}\n", named.string(), (dir / stem).string(),
             named.string());
  return exit_kernel_failed;
}

}  // namespace

Command add_shrink(CLI::App& app) {
  auto args = std::make_shared<ShrinkArgs>();
  CLI::App* c = app.add_subcommand("shrink", "reduce a failing case to the smallest one that fails the same way");
  args->add_to(*c);
  c->add_option("--out", args->out, "folder for the shrunk case (default: next to the case)");
  c->add_option("--attempts", args->attempts, "most cases to run while shrinking (default 400)")
      ->check(CLI::Range(1, 100000));
  return [args] { return run_shrink(*args); };
}

}  // namespace assay::cli
