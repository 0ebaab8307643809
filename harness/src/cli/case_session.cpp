#include "cli/case_session.h"

#include <fmt/format.h>

#include "core/error.h"
#include "exec/loader.h"
#include "exec/oom_retry.h"
#include "gate/gate.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_tolerance.h"
#include "report/npy.h"

namespace assay::cli {
namespace fs = std::filesystem;

void CaseSessionArgs::add_to(CLI::App& app) {
  app.add_option("case", case_file, "case file written by check")->required();
  app.add_option("--spec", spec, "spec to run it against (default: the one the case names)");
  app.add_option("--cache-dir", cache_dir, "compiled-kernel cache (default ~/.cache/assay)");
  app.add_option("--tolerance-scale", tolerance_scale, "T in the tolerance bound (default 2)")
      ->check(CLI::PositiveNumber);
  app.add_option("--isolation", isolation, "worker (default) | in-process")
      ->check(CLI::IsMember({"worker", "in-process"}));
  app.add_option("--timeout", timeout, "seconds a call may take before it is a hang (default: scaled)")
      ->check(CLI::PositiveNumber);
}

static OomRetry::Clock::time_point session_deadline() {
  return OomRetry::Clock::now() + std::chrono::duration_cast<OomRetry::Clock::duration>(
                                      std::chrono::duration<double>(kSessionOomWaitSeconds));
}

CaseOutcome CaseSession::run(const Case& x) {
  return run_when_room(*backend, session_deadline(), x,
                       [&](const Case& y) { return run_case(*backend, *runner, y, exec); });
}

CaseSession open_case_session(const CaseSessionArgs& a) {
  const std::string isolation = !a.isolation.empty() ? a.isolation : a.exact_alloc ? "in-process" : "worker";
  // A worker maps whole memfds and pooled blocks; an exact buffer is neither.
  if (a.exact_alloc && isolation == "worker")
    throw InputError("--exact-alloc replays in process (a worker cannot map exact allocations): drop --isolation worker");
  LoadedCase loaded = load_case_file(a.case_file);
  fs::path spec_file = a.spec.empty() ? loaded.spec : fs::path(a.spec);
  if (spec_file.empty()) throw InputError(a.case_file + ": the case names no spec; pass --spec SPEC");
  CaseSession s;
  s.c = loaded.c;
  s.spec = load_spec(spec_file);
  s.backend = make_backend(s.spec.backend);
  const double need = gemm::case_bytes(s.c);
  if (need > double(s.backend->memory_budget()))
    throw InputError(fmt::format("{}: the case needs {:.3g} GiB, more than the {} backend takes ({:.3g} GiB)",
                                 a.case_file, need / (1u << 30), name(s.spec.backend),
                                 double(s.backend->memory_budget()) / (1u << 30)));
  LoaderOptions lo;
  lo.cache_dir = a.cache_dir;
  if (s.spec.backend == BackendKind::cuda) lo.cuda_arch = cuda_arch();
  const bool isolate = isolation == "worker";
  lo.open = !isolate;
  LoadedKernel kernel = load_kernel(s.spec, lo);
  s.runner = device_retry(*s.backend, session_deadline()).run([&] {
    return make_runner(s.spec, *s.backend, kernel, isolate, fs::temp_directory_path() / "assay-repro");
  });
  s.exec = ExecOptions{s.spec.compute, a.tolerance_scale > 0 ? a.tolerance_scale : gemm::kDefaultScale,
                       s.spec.deterministic, false, a.timeout};
  s.exec.subnormals = s.spec.subnormals;
  s.exec.exact_alloc = a.exact_alloc;
  return s;
}

void dump_tensors(const fs::path& dir, const Case& c, const CaseTensors& t) {
  fs::create_directories(dir);
  auto g = gemm::tensors(c);
  write_npy(dir / "A.npy", g[gemm::A], t.a.data() + t.data_start);
  write_npy(dir / "B.npy", g[gemm::B], t.b.data() + t.data_start);
  write_npy(dir / "C_before.npy", g[gemm::C], t.c0.data() + t.data_start);
  write_npy(dir / "C_out.npy", g[gemm::C], t.c.data() + t.data_start);
  write_npy(dir / "reference.npy", c.m, c.n, t.ref);
  write_npy(dir / "bound.npy", c.m, c.n, t.bound);
}

}  // namespace assay::cli
