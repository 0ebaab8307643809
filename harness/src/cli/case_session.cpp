#include "cli/case_session.h"

#include <fmt/format.h>

#include "core/error.h"
#include "exec/loader.h"
#include "exec/oom_retry.h"
#include "gate/gate.h"
#include "ops/op.h"
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
  const Op& op = op_of(spec);
  return run_when_room(*backend, session_deadline(), op, x,
                       [&](const Case& y) { return run_case(op, *backend, *runner, y, exec); });
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
  const Op& op = op_of(s.spec);
  if (s.c.op != op.name())
    throw InputError(fmt::format("{}: the case is a {} case, the spec {} is for {}", a.case_file, s.c.op,
                                 spec_file.string(), op.name()));
  op.validate(s.c);
  try {
    check_layouts(s.c);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", a.case_file, e.what()));
  }
  s.backend = make_backend(s.spec.backend);
  const double need = op.case_bytes(s.c);
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
  s.exec = ExecOptions{s.spec.compute, a.tolerance_scale > 0 ? a.tolerance_scale : op.default_scale(),
                       s.spec.deterministic, false, a.timeout};
  s.exec.subnormals = s.spec.subnormals;
  s.exec.exact_alloc = a.exact_alloc;
  return s;
}

// Per tensor: inputs as NAME.npy; outputs as handed (NAME_before.npy) and as
// left (NAME_out.npy); each output's FP64 reference and bound (reference.npy
// and bound.npy where the op has one output, NAME_reference.npy otherwise).
void dump_tensors(const fs::path& dir, const Case& c, const CaseTensors& t) {
  fs::create_directories(dir);
  int outputs = 0;
  for (auto& x : c.tensors) outputs += x.role != Role::input;
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const CaseTensor& x = c.tensors[i];
    const TensorGeom g = x.geom();
    if (i < t.before.size() && !t.before[i].empty())
      write_npy(dir / (x.name + (x.role == Role::input ? ".npy" : "_before.npy")), g, t.before[i].data() + t.data_start);
    if (x.role == Role::input) continue;
    if (i < t.after.size() && !t.after[i].empty()) write_npy(dir / (x.name + "_out.npy"), g, t.after[i].data() + t.data_start);
    const std::string prefix = outputs == 1 ? "" : x.name + "_";
    if (i < t.ref.size() && !t.ref[i].empty()) write_npy(dir / (prefix + "reference.npy"), g, t.ref[i]);
    if (i < t.bound.size() && !t.bound[i].empty()) write_npy(dir / (prefix + "bound.npy"), g, t.bound[i]);
  }
}

}  // namespace assay::cli
