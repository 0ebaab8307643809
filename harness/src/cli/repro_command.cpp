// `assay repro CASE.yaml [--dump DIR] [--exact-alloc]`: replays one saved case
// bit for bit and optionally writes its inputs, output and reference as .npy
// files. --exact-alloc gives each tensor its own allocation of exactly its
// extent, for memory checkers (the sanitizer replays of `check --sanitize`).
#include <fmt/format.h>

#include "cli/case_session.h"
#include "cli/commands.h"
#include "core/error.h"
#include "gate/sanitize.h"

namespace assay::cli {
namespace {

struct ReproArgs : CaseSessionArgs {
  std::string dump;
};

int run_repro(const ReproArgs& a) {
  CaseSession s = open_case_session(a);
  s.exec.keep_tensors = !a.dump.empty();
  if (a.exact_alloc)
    fmt::print("exact allocations: each tensor is its own allocation of exactly its extent, with no guard zones, so "
               "a write past a tensor is not caught here (only one into the padding between its rows is): run this "
               "under a memory checker (compute-sanitizer --tool memcheck --padding {}, valgrind) to see it\n",
               kSanitizerPaddingBytes);
  CaseOutcome o = s.run(s.c);
  fmt::print("{}: {}\n", s.spec.name, describe(s.c));
  fmt::print("verdict: {}", name(o.verdict));
  if (o.verdict != Verdict::pass) fmt::print(" (call {})\n  {}", o.call, o.detail);
  fmt::print("\n");
  for (auto& e : o.stats.first_bad)
    fmt::print("  {}[{},{}] expected {:.17g} got {:.17g} ({:.3g} ulp, {:.3g}x the bound)\n",
               e.tensor >= 0 && size_t(e.tensor) < s.c.tensors.size() ? s.c.tensors[size_t(e.tensor)].name : "?",
               e.row, e.col, e.expected, e.got, e.ulps, e.ratio);
  if (!a.dump.empty()) {
    if (o.tensors.before.empty()) {
      fmt::print("nothing to dump: call 1 stopped before the reference ran\n");
    } else {
      dump_tensors(a.dump, s.c, o.tensors);
      fmt::print("wrote A.npy B.npy C_before.npy C_out.npy reference.npy bound.npy to {}\n", a.dump);
    }
  }
  return o.verdict == Verdict::pass ? exit_pass : exit_kernel_failed;
}

}  // namespace

Command add_repro(CLI::App& app) {
  auto args = std::make_shared<ReproArgs>();
  CLI::App* c = app.add_subcommand("repro", "replay one saved case and show what went wrong");
  args->add_to(*c);
  c->add_option("--dump", args->dump, "write inputs, output and reference as .npy into this folder");
  c->add_flag("--exact-alloc", args->exact_alloc,
              "each tensor its own allocation of exactly its extent, no guard zones, in process: for memory checkers");
  return [args] { return run_repro(*args); };
}

}  // namespace assay::cli
