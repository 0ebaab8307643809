// Every host sample kernel gets exactly the verdict its spec expects: the
// correct ones pass, each planted bug is caught as its own class.
#include <catch2/catch.hpp>

#include "zoo_checks.h"

using namespace assay;

TEST_CASE("host sample kernels get their expected verdicts", "[samples]") {
  // Planted host bugs first fail by case 47; of at most 100 cases a correct
  // kernel runs at least 80 (the rest are too large for the host backend,
  // or ruled out by requires: 91 on CI).
  CHECK(testing::check_host_zoo("gemm", testing::sample_gate_options(100), 9, 80).planted >= 6);
}

TEST_CASE("hostile host kernels crash or hang in their worker, never in the harness", "[samples][worker]") {
  auto backend = make_backend(BackendKind::host);
  Reporter silent;
  auto opt = testing::sample_gate_options(60);
  opt.timeout_s = 2;  // the hang kernel costs this per failing case
  auto specs = testing::sample_specs(BackendKind::host, "hostile");
  REQUIRE(specs.size() >= 5);
  for (auto& file : specs) {
    Spec spec = load_spec(file);
    KernelReport r = run_gate(spec, *backend, opt, silent);
    INFO(spec.name << ": got " << r.verdict() << ", expected " << spec.expect << " "
                   << (r.failures.empty() ? r.setup_error : r.failures.front().outcome.detail));
    CHECK(r.verdict() == spec.expect);
    CHECK(r.isolation == "worker");
  }
}
