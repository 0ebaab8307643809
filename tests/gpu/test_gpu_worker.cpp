// On the GPU: candidates run in a worker that maps the case's device buffers
// through CUDA IPC. A sticky CUDA error, a signal or a hang in the worker is a
// verdict; the harness's own context is untouched and the run goes on.
#include <catch2/catch.hpp>

#include <regex>

#include "../samples_support.h"
#include "exec/executor.h"
#include "exec/worker_runner.h"
#include "ops/gemm/gemm_problem.h"

using namespace assay;

TEST_CASE("hostile cuda kernels get their expected verdicts out of process", "[gpu][worker]") {
  auto backend = make_backend(BackendKind::cuda);
  Reporter silent;
  auto opt = testing::sample_gate_options(300);  // misaligned_load and loop_k0 need ~200-270 cases
  opt.loader.cuda_arch = cuda_arch();
  for (auto& file : testing::sample_specs(BackendKind::cuda, "hostile")) {
    Spec spec = load_spec(file);
    KernelReport r = run_gate(spec, *backend, opt, silent);
    INFO(spec.name << ": got " << r.verdict() << ", expected " << spec.expect << " "
                   << (r.failures.empty() ? r.setup_error : r.failures.front().outcome.detail));
    CHECK(r.isolation == "worker");
    CHECK(r.verdict() == spec.expect);
  }
  // The harness's context survived all of it: a correct kernel still passes.
  for (auto& file : testing::sample_specs(BackendKind::cuda)) {
    Spec spec = load_spec(file);
    if (spec.name != "cuda_naive_f32") continue;
    KernelReport r = run_gate(spec, *backend, opt, silent);
    CHECK(r.verdict() == "pass");
    CHECK(r.cases_passed == r.cases_run);
  }
}

TEST_CASE("the misaligned-load sample's shrunk crash names what misaligns A's rows", "[gpu][worker][shrink]") {
  // Its float4 path needs k % 4 == 0, where a compact row-major A is aligned:
  // only an offset or a padded ld misaligns it, and the explanation says which.
  auto backend = make_backend(BackendKind::cuda);
  Reporter silent;
  auto opt = testing::sample_gate_options(300);
  opt.loader.cuda_arch = cuda_arch();
  Spec spec;
  for (auto& file : testing::sample_specs(BackendKind::cuda, "hostile"))
    if (file.stem() == "misaligned_load") spec = load_spec(file);
  REQUIRE_FALSE(spec.name.empty());
  KernelReport r = run_gate(spec, *backend, opt, silent);
  REQUIRE_FALSE(r.failures.empty());
  const CaseFailure& f = r.failures.front();
  INFO(describe(f.c) << "\n" << f.shrunk.explanation);
  CHECK(f.outcome.verdict == Verdict::crash);
  CHECK(std::regex_search(f.shrunk.explanation,
                          std::regex(R"(fails at (offset|ld)\(A\) = \d+ \((rows of )?A not 16-byte aligned\); passes for)")));
}

TEST_CASE("a sticky CUDA error costs one worker, not the run", "[gpu][worker]") {
  auto backend = make_backend(BackendKind::cuda);
  Spec spec;
  for (auto& file : testing::sample_specs(BackendKind::cuda, "hostile"))
    if (file.stem() == "illegal_address") spec = load_spec(file);
  REQUIRE_FALSE(spec.name.empty());
  LoaderOptions lo;
  lo.open = false;
  lo.cuda_arch = cuda_arch();
  lo.cache_dir = std::filesystem::temp_directory_path() / "assay-test-kernel-cache";
  WorkerOptions wo;
  wo.library = load_kernel(spec, lo).library;
  WorkerRunner runner(*backend, wo);
  gemm::Problem p;
  p.m = 33, p.n = 17, p.k = 9;
  const Case c = gemm::to_case(p);
  ExecOptions exec;
  for (int i = 0; i < 2; ++i) {
    CaseOutcome o = run_case(op_of(spec), *backend, runner, c, exec);
    INFO(o.detail);
    CHECK(o.verdict == Verdict::crash);
    CHECK(o.detail.find("cudaErrorIllegalAddress") != std::string::npos);
  }
  CHECK(runner.workers_started() == 2);
  CHECK(backend->synchronize().empty());
}

// Shared memory is poisoned before each call in the worker (NaN in every
// float type): a kernel that sums shared slots it never wrote (rows shorter
// than its block) reads NaN at its first such case. Without the poison it
// read zeros in a fresh context, and only a case after a longer row left
// values behind failed (seconds of cases, missed in a 6 s zoo budget).
TEST_CASE("a kernel that reads shared memory it never wrote fails within a few cases", "[gpu][worker]") {
  auto backend = make_backend(BackendKind::cuda);
  Reporter silent;
  auto opt = testing::sample_gate_options(12);
  opt.loader.cuda_arch = cuda_arch();
  int kernels = 0;
  for (const char* family : {"layernorm", "rmsnorm", "softmax", "reduce"})
    for (auto& file : testing::sample_specs(BackendKind::cuda, family)) {
      if (file.stem() != "bug_uninit_smem") continue;
      Spec spec = load_spec(file);
      KernelReport r = run_gate(spec, *backend, opt, silent);
      INFO(family << " " << spec.name << ": got " << r.verdict() << " after " << r.cases_run << " cases");
      CHECK(r.isolation == "worker");
      // Its spec's verdict (nan_mismatch where the sum took a poisoned slot;
      // softmax's idle slots hold its max phase's -inf: mismatch), at the first short row.
      CHECK(r.verdict() == spec.expect);
      CHECK(r.cases_run <= 3);
      ++kernels;
    }
  CHECK(kernels == 4);
}
