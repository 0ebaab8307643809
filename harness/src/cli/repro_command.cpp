// `assay repro CASE.yaml [--dump DIR]`: replays one saved case bit for bit and
// optionally writes its inputs, output and reference as .npy files.
#include <fmt/format.h>

#include "backend/backend.h"
#include "cli/commands.h"
#include "core/error.h"
#include "exec/executor.h"
#include "exec/guarded_tensor.h"
#include "exec/loader.h"
#include "gate/gate.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_tolerance.h"
#include "report/npy.h"

namespace assay::cli {
namespace fs = std::filesystem;
namespace {

struct ReproArgs {
  std::string case_file, spec, dump, cache_dir;
  double tolerance_scale = 0, timeout = 0;
  std::string isolation = "worker";
};

void dump_tensors(const fs::path& dir, const Case& c, const CaseTensors& t) {
  fs::create_directories(dir);
  auto g = gemm::tensors(c);
  write_npy(dir / "A.npy", g[gemm::A], GuardedTensor::data_in(t.a));
  write_npy(dir / "B.npy", g[gemm::B], GuardedTensor::data_in(t.b));
  write_npy(dir / "C_before.npy", g[gemm::C], GuardedTensor::data_in(t.c0));
  write_npy(dir / "C_out.npy", g[gemm::C], GuardedTensor::data_in(t.c));
  write_npy(dir / "reference.npy", c.m, c.n, t.ref);
  write_npy(dir / "bound.npy", c.m, c.n, t.bound);
}

int run_repro(const ReproArgs& a) {
  LoadedCase loaded = load_case_file(a.case_file);
  fs::path spec_file = a.spec.empty() ? loaded.spec : fs::path(a.spec);
  if (spec_file.empty()) throw InputError(a.case_file + ": the case names no spec; pass --spec SPEC");
  Spec spec = load_spec(spec_file);
  auto backend = make_backend(spec.backend);
  const double need = gemm::case_bytes(loaded.c);
  if (need > double(backend->memory_budget()))
    throw InputError(fmt::format("{}: the case needs {:.3g} GiB, more than the {} backend takes ({:.3g} GiB)",
                                 a.case_file, need / (1u << 30), name(spec.backend),
                                 double(backend->memory_budget()) / (1u << 30)));
  LoaderOptions lo;
  lo.cache_dir = a.cache_dir;
  if (spec.backend == BackendKind::cuda) lo.cuda_arch = cuda_arch();
  const bool isolate = a.isolation == "worker" && spec.backend == BackendKind::host;
  lo.open = !isolate;
  LoadedKernel kernel = load_kernel(spec, lo);
  auto runner = make_runner(spec, *backend, kernel, isolate, fs::temp_directory_path() / "assay-repro");
  ExecOptions opt{spec.compute, a.tolerance_scale > 0 ? a.tolerance_scale : gemm::kDefaultScale, spec.deterministic,
                  !a.dump.empty()};
  const Case& c = loaded.c;
  opt.timeout_s = a.timeout;
  CaseOutcome o = run_case(*backend, *runner, c, opt);
  fmt::print("{}: {}\n", spec.name, describe(c));
  fmt::print("verdict: {}", name(o.verdict));
  if (o.verdict != Verdict::pass) fmt::print(" (call {})\n  {}", o.call, o.detail);
  fmt::print("\n");
  for (auto& e : o.stats.first_bad)
    fmt::print("  C[{},{}] expected {:.17g} got {:.17g} ({:.3g} ulp, {:.3g}x the bound)\n", e.row, e.col, e.expected,
               e.got, e.ulps, e.ratio);
  if (!a.dump.empty()) {
    if (o.tensors.a.empty()) {
      fmt::print("nothing to dump: call 1 stopped before the reference ran\n");
    } else {
      dump_tensors(a.dump, c, o.tensors);
      fmt::print("wrote A.npy B.npy C_before.npy C_out.npy reference.npy bound.npy to {}\n", a.dump);
    }
  }
  return o.verdict == Verdict::pass ? exit_pass : exit_kernel_failed;
}

}  // namespace

Command add_repro(CLI::App& app) {
  auto args = std::make_shared<ReproArgs>();
  CLI::App* c = app.add_subcommand("repro", "replay one saved case and show what went wrong");
  c->add_option("case", args->case_file, "case file written by check")->required();
  c->add_option("--spec", args->spec, "spec to run it against (default: the one the case names)");
  c->add_option("--dump", args->dump, "write inputs, output and reference as .npy into this folder");
  c->add_option("--cache-dir", args->cache_dir, "compiled-kernel cache (default ~/.cache/assay)");
  c->add_option("--tolerance-scale", args->tolerance_scale, "T in the tolerance bound (default 2)")
      ->check(CLI::PositiveNumber);
  c->add_option("--isolation", args->isolation, "worker (default for host kernels) | in-process")
      ->check(CLI::IsMember({"worker", "in-process"}));
  c->add_option("--timeout", args->timeout, "seconds the call may take before it is a hang (default: scaled)")
      ->check(CLI::PositiveNumber);
  return [args] { return run_repro(*args); };
}

}  // namespace assay::cli
