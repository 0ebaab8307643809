#include <fmt/format.h>

#include "baseline/baseline.h"
#include "baseline/zoo.h"
#include "core/error.h"
#include "exec/loader.h"
#include "ops/op.h"

namespace assay::baseline {
namespace {

// The gate's time to detect: its cases' own times up to and including the
// first failing one (compiling, starting the worker and shrinking left out,
// as they are for the baselines' times).
class DetectReporter final : public Reporter {
 public:
  void case_done(const KernelReport&, const Case&, const CaseOutcome& o) override {
    if (failed_) return;
    seconds_ += o.seconds;
    failed_ = o.verdict != Verdict::pass;
  }
  double seconds() const { return seconds_; }

 private:
  double seconds_ = 0;
  bool failed_ = false;
};

ZooCell gate_cell(const KernelReport& k, bool planted, double seconds) {
  ZooCell c;
  c.verdict = k.verdict(), c.cases = int(k.cases_run), c.seconds = seconds;
  c.worst_pass_ratio = k.worst_pass_ratio;
  if (!k.setup_error.empty()) {
    c.status = "error", c.detail = k.setup_error;
  } else if (c.verdict == "infrastructure_error") {
    c.status = "error", c.detail = k.infrastructure.front().message;
  } else if (c.verdict == "no_cases") {
    c.status = "error", c.detail = "no case ran (all outside the spec's requires or the backend's limits)";
  } else {
    c.status = judge_cell(planted, c.verdict != "pass");
    if (!k.failures.empty()) c.detail = c.verdict + ": " + k.failures.front().outcome.detail;
  }
  return c;
}

using BaselineFn = BaselineResult (*)(Backend&, Runner&, const Spec&, const BaselineOptions&);

}  // namespace

ZooRow run_zoo_kernel(const Spec& spec, Backend& backend, const GateOptions& opt) {
  ZooRow row;
  row.name = spec.name, row.spec = spec.file.string(), row.expect = spec.expect;
  row.family = spec.op.empty() ? std::string(default_op_name()) : spec.op;
  row.planted = !spec.expect.empty() && spec.expect != "pass";
  DetectReporter detect;
  const KernelReport k = run_gate(spec, backend, opt, detect);
  row.cells.push_back(gate_cell(k, row.planted, detect.seconds()));

  // The baselines call the candidate the way the gate did: in a worker
  // process, or in process where the gate had to.
  const bool isolate = k.isolation == "worker";
  std::string setup_error;
  LoadedKernel kernel;
  try {
    if (!isolate && (spec.expect == "crash" || spec.expect == "hang"))
      throw InputError("a kernel expected to " + spec.expect + " needs a worker process");
    LoaderOptions lo = opt.loader;
    lo.open = !isolate;
    kernel = load_kernel(spec, lo);
  } catch (const std::runtime_error& e) {
    setup_error = e.what();
  }
  const BaselineFn fns[] = {run_kernelbench, run_tutorial, run_assert_close, run_deepgemm};
  for (size_t j = 0; j < std::size(fns); ++j) {
    ZooCell cell;
    try {
      if (!setup_error.empty()) throw InputError(setup_error);
      // A fresh runner per checker: state a kernel keeps between calls
      // (call counters, caches) starts over, as in a separate test program.
      auto runner = make_runner(spec, backend, kernel, isolate, opt.out_dir / spec.name / kZooCheckers[j + 1]);
      BaselineOptions bo;
      bo.timeout_s = opt.timeout_s;
      const BaselineResult b = fns[j](backend, *runner, spec, bo);
      cell.status = b.applicable ? judge_cell(row.planted, b.caught) : "n/a";
      cell.seconds = b.seconds, cell.cases = b.cases_run, cell.detail = b.detail, cell.failed_case = b.failed_case;
      // A family without this rule (DeepGEMM's is fp8_gemm's): n/a, no note.
      if (!b.applicable && b.detail.rfind("no such rule", 0) == 0) cell.detail.clear();
    } catch (const std::runtime_error& e) {  // InputError, InfraError: this checker could not run
      cell.status = "error", cell.detail = e.what();
    }
    row.cells.push_back(cell);
  }
  return row;
}

}  // namespace assay::baseline
