// On the GPU: every cuda sample kernel gets the verdict its spec expects.
// A correct kernel runs 150 cases (no false alarm among them); a planted
// bug gets the gate's default run, as `assay check` gives it, and stops at
// its first failure: some bugs show only at the sweep's large shapes
// (bug_index32: an index past 2^31), which 150 cases did not reach.
#include <catch2/catch.hpp>

#include "../samples_support.h"

using namespace assay;

TEST_CASE("cuda sample kernels get their expected verdicts", "[gpu][samples]") {
  auto backend = make_backend(BackendKind::cuda);
  Reporter silent;
  auto opt = testing::sample_gate_options(150);
  opt.loader.cuda_arch = cuda_arch();
  for (auto& file : testing::sample_specs(BackendKind::cuda)) {
    Spec spec = load_spec(file);
    GateOptions o = opt;
    if (!spec.expect.empty() && spec.expect != "pass") o.max_cases.reset();
    KernelReport r = run_gate(spec, *backend, o, silent);
    INFO(spec.name << ": got " << r.verdict() << ", expected " << spec.expect << " "
                   << (r.failures.empty() ? r.setup_error : r.failures.front().outcome.detail));
    CHECK(r.verdict() == spec.expect);
  }
}
