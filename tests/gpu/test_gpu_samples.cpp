// On the GPU: every cuda sample kernel gets the verdict its spec expects.
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
    KernelReport r = run_gate(spec, *backend, opt, silent);
    INFO(spec.name << ": got " << r.verdict() << ", expected " << spec.expect << " "
                   << (r.failures.empty() ? r.setup_error : r.failures.front().outcome.detail));
    CHECK(r.verdict() == spec.expect);
  }
}
