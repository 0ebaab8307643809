// `assay bench SPEC [--baseline SPEC | --baseline reference]`: a candidate's
// speed against a baseline's on the same cases, by a harness it cannot fool
// (bench/bench.h, docs/bench.md). Exit 0 when every shape was timed (and,
// with --require-speedup X, the geometric mean of the speedups is at least
// X), 1 when a shape failed (a gate verdict, timing_escape,
// impossible_speed, baseline_failed) or the claim does not hold, 2 on bad
// input, 3 when the machine cannot run it.
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "backend/backend.h"
#include "bench/bench.h"
#include "bench/bench_report.h"
#include "bench/bench_shapes.h"
#include "cli/commands.h"
#include "core/error.h"
#include "ops/op.h"
#include "report/bench_html.h"

namespace assay::cli {
namespace fs = std::filesystem;
namespace {

struct BenchArgs {
  std::string spec, baseline = "reference", shapes, json, markdown, junit, html, cache_dir, out_dir = "assay-out/bench";
  double require_speedup = 0;
  double min_seconds = bench::StoppingRule{}.min_seconds, max_seconds = bench::StoppingRule{}.timeout_seconds;
  int64_t min_samples = bench::StoppingRule{}.min_samples;
  double max_noise = bench::StoppingRule{}.max_noise;
  int input_sets = 2;
  uint64_t seed = 1;
  bool quiet = false;
};

void write_file(const fs::path& file, const std::string& text) {
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  std::ofstream out(file);
  out << text;
  if (!out) throw InfraError("cannot write " + file.string());
}

int run_bench_command(const BenchArgs& a) {
  const Spec candidate = load_spec(a.spec);
  std::optional<Spec> baseline;
  if (a.baseline != "reference") baseline = load_spec(a.baseline);
  std::unique_ptr<Backend> backend = make_backend(candidate.backend);  // InfraError (exit 3) without a GPU
  bench::BenchOptions opt;
  if (!a.shapes.empty()) opt.shapes = bench::load_shapes_file(a.shapes);
  opt.rule.min_seconds = a.min_seconds, opt.rule.timeout_seconds = a.max_seconds;
  opt.rule.min_samples = a.min_samples, opt.rule.max_noise = a.max_noise;
  opt.input_sets = a.input_sets, opt.seed = a.seed;
  if (a.require_speedup > 0) opt.require_speedup = a.require_speedup;
  opt.loader.cache_dir = a.cache_dir;
  if (candidate.backend == BackendKind::cuda) opt.loader.cuda_arch = cuda_arch();
  opt.out_dir = a.out_dir;
  const bench::BenchReport report = bench::run_bench(candidate, baseline ? &*baseline : nullptr, *backend, opt);
  const std::string md = bench::to_markdown(report);
  if (!a.quiet) std::fputs(md.c_str(), stdout);
  const nlohmann::json j = bench::to_json(report);
  if (!a.json.empty()) write_file(a.json, j.dump(2) + "\n");
  if (!a.html.empty()) write_file(a.html, bench_html(j));
  if (!a.markdown.empty()) write_file(a.markdown, md);
  if (!a.junit.empty()) write_file(a.junit, bench::to_junit(report));
  if (!report.setup_error.empty()) std::fprintf(stderr, "assay: %s\n", report.setup_error.c_str());
  return report.exit_code();
}

}  // namespace

Command add_bench(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* b = app.add_subcommand("bench", "time a kernel against a baseline on the same cases (docs/bench.md)");
  b->add_option("spec", args->spec, "the candidate's spec")->required();
  b->add_option("--baseline", args->baseline, "a spec of the same op, or 'reference' (the op's FP64 reference; default)");
  b->add_option("--shapes", args->shapes, "a YAML file `shapes: [{m: .., n: .., k: ..}, ...]` (default: the spec's "
                                          "bench: list, else the op's realistic shapes)");
  b->add_option("--json", args->json, "JSON report");
  b->add_option("--markdown", args->markdown, "Markdown report");
  b->add_option("--junit", args->junit, "JUnit XML, one test case per shape");
  b->add_option("--html", args->html, "one self-contained HTML page with plots");
  b->add_option("--require-speedup", args->require_speedup,
                "exit 1 unless the geometric mean speedup over the shapes is at least X (e.g. 0.97: at most 3 % slower)")
      ->check(CLI::PositiveNumber);
  b->add_option("--min-seconds", args->min_seconds, "timed seconds per side and mode before stopping (default 0.5)")
      ->check(CLI::NonNegativeNumber);
  b->add_option("--max-seconds", args->max_seconds, "timed seconds per side and mode at most (default 15)")
      ->check(CLI::PositiveNumber);
  b->add_option("--min-samples", args->min_samples, "samples per side and mode before stopping (default 10)")
      ->check(CLI::PositiveNumber);
  b->add_option("--max-noise", args->max_noise, "relative IQR at which timing stops (default 0.005)")
      ->check(CLI::PositiveNumber);
  b->add_option("--input-sets", args->input_sets, "input sets the timed calls rotate over (2 to 4, default 2)")
      ->check(CLI::Range(2, 4));
  b->add_option("--seed", args->seed, "seed of the inputs (default 1)");
  b->add_option("--cache-dir", args->cache_dir, "compiled-kernel cache (default ~/.cache/assay)");
  b->add_option("--out", args->out_dir, "folder for the workers' logs (default assay-out/bench)");
  b->add_flag("--quiet", args->quiet, "no Markdown on stdout");
  return [args] { return run_bench_command(*args); };
}

}  // namespace assay::cli
