// Every host sample kernel gets exactly the verdict its spec expects: the
// correct ones pass, each planted bug is caught as its own class.
#include <catch2/catch.hpp>

#include "samples_support.h"

using namespace assay;

TEST_CASE("host sample kernels get their expected verdicts", "[samples]") {
  auto backend = make_backend(BackendKind::host);
  Reporter silent;
  auto opt = testing::sample_gate_options(100);  // planted host bugs first fail by case 47; the zoo runs the correct ones longer
  auto specs = testing::sample_specs(BackendKind::host);
  REQUIRE(specs.size() >= 9);
  int planted = 0;
  for (auto& file : specs) {
    Spec spec = load_spec(file);
    REQUIRE_FALSE(spec.expect.empty());
    KernelReport r = run_gate(spec, *backend, opt, silent);
    INFO(spec.name << ": got " << r.verdict() << ", expected " << spec.expect << " "
                   << (r.failures.empty() ? r.setup_error : r.failures.front().outcome.detail));
    CHECK(r.verdict() == spec.expect);
    if (spec.expect == "pass") CHECK(r.cases_run >= 80);  // of at most 100: the rest are skipped (too large for the host backend, or ruled out by requires)
    planted += spec.expect != "pass";
  }
  CHECK(planted >= 6);
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
