// Benchmark: what running candidates in a worker process costs. Times the
// full case pipeline (fill, four candidate calls, three references, guards,
// compare) on tiny host GEMMs with the in-process runner and with the worker,
// interleaved in blocks in one run, and reports cases/s and their ratio.
//
//   assay_bench_isolation [--cases N] [--blocks B] [--spec SPEC] [--out FILE.md]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "bench_cli.h"
#include "backend/backend.h"
#include "core/build_info.h"
#include "exec/executor.h"
#include "exec/loader.h"
#include "exec/worker_runner.h"
#include "ops/gemm/gemm_generator.h"

using namespace assay;
namespace fs = std::filesystem;

namespace {

double run_block(const Op& op, Backend& be, Runner& runner, const std::vector<Case>& cases, const ExecOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  for (const Case& c : cases)
    if (run_case(op, be, runner, c, opt).verdict != Verdict::pass) throw std::runtime_error("a case failed: " + describe(c));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int run_bench(int argc, char** argv) {
  const bench_cli::Options o = bench_cli::parse_options(argc, argv, {"--cases", "--blocks", "--spec", "--out"});
  long long cases_per_block = 0, blocks = 0;
  const bool numbers_ok = bench_cli::read_whole(o.value("--cases", "500"), cases_per_block) &&
                          bench_cli::read_whole(o.value("--blocks", "6"), blocks) && cases_per_block >= 1 &&
                          cases_per_block <= 10'000'000 && blocks >= 1 && blocks <= 1000;
  if (!o.ok || !numbers_ok) {
    std::fprintf(stderr, "usage: %s [--cases 1..10000000] [--blocks 1..1000] [--spec SPEC] [--out FILE.md]\n", argv[0]);
    return bench_cli::kUsage;
  }
  const fs::path spec_file =
      o.value("--spec", (bench_cli::source_dir() / "generated_kernels/gemm/host/naive_f32.yaml").string());
  const fs::path out = o.value("--out", "");
  Spec spec = load_spec(spec_file);
  auto backend = make_backend(BackendKind::host);
  LoaderOptions lo;
  LoadedKernel kernel = load_kernel(spec, lo);
  InProcessRunner in_process(kernel.run);
  WorkerOptions wo;
  wo.library = kernel.library, wo.entry = spec.entry;
  WorkerRunner worker(*backend, wo);
  if (std::string why = worker.warm_up(); !why.empty()) throw std::runtime_error(why);

  // Tiny cases (every dimension <= 64): where a process boundary costs most.
  const Op& op = op_of(spec);
  std::vector<Case> cases;
  for (uint64_t i = 0; int64_t(cases.size()) < cases_per_block; ++i)
    if (auto c = op.random_case(spec, 7, i, GenLimits{64, 64.0 * 64 * 64})) cases.push_back(*c);
  ExecOptions opt{spec.compute, 2.0, spec.deterministic, false, 0};
  run_block(op, *backend, in_process, cases, opt);  // warm caches once
  double t_in = 0, t_worker = 0;
  for (int64_t b = 0; b < blocks; ++b) {  // interleaved, so drift hits both alike
    t_in += run_block(op, *backend, in_process, cases, opt);
    t_worker += run_block(op, *backend, worker, cases, opt);
  }
  const double n = double(cases_per_block * blocks);
  const double rate_in = n / t_in, rate_worker = n / t_worker;
  std::string report = fmt::format(
      "| runner | cases | seconds | cases/s |\n| --- | --- | --- | --- |\n"
      "| in process | {:.0f} | {:.2f} | {:.0f} |\n| worker process | {:.0f} | {:.2f} | {:.0f} |\n\n"
      "worker / in-process throughput: {:.2f}\n",
      n, t_in, rate_in, n, t_worker, rate_worker, rate_worker / rate_in);
  report += fmt::format("\nMeasured with {}.\n", build_line());
  std::fputs(report.c_str(), stdout);
  if (!out.empty()) std::ofstream(out) << report;
  return 0;
}

int main(int argc, char** argv) {
  return assay::bench_cli::guarded(argv[0], [&] { return run_bench(argc, argv); });
}
