// `assay zoo SPEC|DIR...`: the detection benchmark of issue #5. Every kernel
// goes through assay's gate and through today's published checkers
// (harness/src/baseline/); the table says who caught which planted bug and who
// raised false alarms. Exit 0 when assay caught every planted kernel with no
// false alarm (the baselines' misses are the point and do not count), 1 when
// not, 2 on bad input, 3 when the machine cannot run what was asked.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "backend/backend.h"
#include "baseline/zoo.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/stop.h"

namespace assay::cli {
namespace fs = std::filesystem;
namespace {

struct ZooArgs {
  std::vector<std::string> paths;
  std::string backend = "auto", out = "docs/results", json, markdown, cache_dir, cases_out = "assay-out/zoo";
  double budget = 60;
  int64_t max_cases = 0;  // 0: the gate's own (the sweep and 200 random cases)
  std::string command;    // as typed, for the report
};

std::string device_name(BackendKind kind) {
  if (kind == BackendKind::host) return "host";
  cudaDeviceProp prop{};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) return "cuda";
  return prop.name;
}

// Written beside and renamed into place: a run killed mid-write leaves the
// last whole report, never half of one.
void write_file(const fs::path& file, const std::string& text) {
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  const fs::path part = file.string() + ".part";
  {
    std::ofstream out(part);
    out << text;
    if (!out.flush()) throw InfraError("cannot write " + part.string());
  }
  std::error_code ec;
  fs::rename(part, file, ec);
  if (ec) throw InfraError("cannot write " + file.string() + ": " + ec.message());
}

int run_zoo(const ZooArgs& a) {
  BackendKind kind = a.backend == "cuda" ? BackendKind::cuda : BackendKind::host;
  if (a.backend == "auto") kind = cuda_available() ? BackendKind::cuda : BackendKind::host;
  std::unique_ptr<Backend> backend = make_backend(kind);  // InfraError (exit 3) without a GPU
  GateOptions opt;
  opt.budget_seconds = a.budget;
  if (a.max_cases > 0) opt.max_cases = a.max_cases;
  // The zoo measures detection: the first failure settles a kernel, so no
  // more failures and no shrinking; no corpus replay, so the sweep must find
  // every bug itself (the bundled kernels have no corpus anyway).
  opt.max_failures = 1, opt.shrink_attempts = 0;
  opt.out_dir = a.cases_out, opt.corpus_dir = fs::path(a.cases_out) / "no-corpus";
  opt.loader.cache_dir = a.cache_dir;
  if (kind == BackendKind::cuda) opt.loader.cuda_arch = cuda_arch();

  baseline::ZooMeta meta;
  const std::time_t now = std::time(nullptr);
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  meta.date = date, meta.backend = std::string(name(kind)), meta.device = device_name(kind);
  meta.budget_s = a.budget, meta.command = a.command;
  if (a.budget < 60)
    meta.note = fmt::format("gate budget {:g} s per kernel instead of the default 60 (CI time): correct kernels "
                            "run fewer random cases",
                            a.budget);
  if (a.max_cases > 0)
    meta.note += fmt::format("{}at most {} cases per kernel (CI time; every planted host bug falls within 100)",
                             meta.note.empty() ? "" : "; ", a.max_cases);
  const fs::path stem = fs::path(a.out) / fmt::format("{}-zoo-{}", meta.date, meta.backend);
  const fs::path md = a.markdown.empty() ? fs::path(stem.string() + ".md") : fs::path(a.markdown);
  const fs::path js = a.json.empty() ? fs::path(stem.string() + ".json") : fs::path(a.json);

  std::vector<baseline::ZooRow> rows;
  int code = exit_pass;
  const auto files = collect_spec_files(a.paths);
  // The reports are rewritten after every kernel: a zoo stopped by a time
  // limit or a signal keeps the kernels it finished, marked as partial.
  auto write_reports = [&](bool done) {
    baseline::ZooMeta m = meta;
    if (!done)
      m.note = fmt::format("partial: {} of {} spec files' kernels; {}{}", rows.size(), files.size(),
                           stop_requested() ? "stopped by " + stop_signal_name() : "the run had not finished",
                           meta.note.empty() ? "" : "; " + meta.note);
    const auto totals = baseline::zoo_totals(rows);
    write_file(md, baseline::zoo_markdown(rows, totals, m));
    write_file(js, baseline::zoo_json(rows, totals, m).dump(2) + "\n");
  };
  install_stop_handlers();  // SIGTERM from a time limit: keep the finished kernels (below)
  for (const fs::path& file : files) {
    if (stop_requested()) break;
    Spec spec;
    try {
      spec = load_spec(file);
    } catch (const InputError& e) {
      fmt::print(stderr, "assay: {}\n", e.what());
      code = worse_exit(code, exit_bad_input);
      continue;
    }
    if (spec.backend != kind) continue;
    baseline::ZooRow row;
    try {
      row = baseline::run_zoo_kernel(spec, *backend, opt);
    } catch (const InfraError& e) {  // the machine failed this kernel: record it, keep the others' results
      fmt::print(stderr, "assay: infrastructure: {}: {}\n", spec.name, e.what());
      code = worse_exit(code, exit_infrastructure);
      row.name = spec.name, row.spec = file.string(), row.expect = spec.expect;
      row.planted = !spec.expect.empty() && spec.expect != "pass";
      row.cells.assign(std::size(baseline::kZooCheckers), baseline::ZooCell{"error", "", 0, 0, e.what(), ""});
    }
    if (stop_requested()) break;  // this kernel's run was cut short: no verdict for it
    std::string line = fmt::format("zoo: {:<28}", row.name);
    for (size_t j = 0; j < row.cells.size(); ++j) line += fmt::format(" {}={}", baseline::kZooCheckers[j], row.cells[j].status);
    fmt::print("{}\n", line);
    std::fflush(stdout);
    const std::string& gate = row.cells.front().status;
    if (gate != "caught" && gate != "pass") code = worse_exit(code, exit_kernel_failed);
    rows.push_back(std::move(row));
    write_reports(false);
  }
  if (stop_requested()) {
    write_reports(false);
    fmt::print(stderr, "assay: zoo stopped by {} after {} kernels; wrote {} and {}\n", stop_signal_name(), rows.size(),
               md.string(), js.string());
    return 128 + stop_signal();
  }
  if (rows.empty()) throw InputError(fmt::format("no {} specs among the given paths", name(kind)));

  const auto totals = baseline::zoo_totals(rows);
  fmt::print("\n{}", baseline::zoo_console(rows, totals));
  fmt::print("\n{}", baseline::zoo_family_console(baseline::zoo_family_totals(rows)));
  write_reports(true);
  fmt::print("\nwrote {} and {}\n", md.string(), js.string());
  return code;
}

}  // namespace

Command add_zoo(CLI::App& app) {
  auto args = std::make_shared<ZooArgs>();
  CLI::App* z = app.add_subcommand("zoo", "bug zoo: assay's gate against KernelBench, tutorial and assert_close rules");
  z->add_option("specs", args->paths, "spec files or folders of specs")->required();
  z->add_option("--backend", args->backend, "auto (cuda if a GPU is present, else host) | cuda | host")
      ->check(CLI::IsMember({"auto", "cuda", "host"}));
  z->add_option("--out", args->out, "folder for the reports (default docs/results)");
  z->add_option("--budget", args->budget, "gate seconds per kernel (default 60)")->check(CLI::PositiveNumber);
  z->add_option("--max-cases", args->max_cases, "gate cases per kernel at most (default: the sweep and 200 random)")
      ->check(CLI::PositiveNumber);
  z->add_option("--json", args->json, "JSON report (default OUT/DATE-zoo-BACKEND.json)");
  z->add_option("--markdown", args->markdown, "Markdown table (default OUT/DATE-zoo-BACKEND.md)");
  z->add_option("--cases-out", args->cases_out, "folder for the gate's failing case files (default assay-out/zoo)");
  z->add_option("--cache-dir", args->cache_dir, "compiled-kernel cache (default ~/.cache/assay)");
  return [args, z] {
    args->command = "assay zoo";
    for (const std::string& p : args->paths) args->command += " " + p;
    for (const auto* o : z->get_options())
      if (o->get_lnames().size() && o->count() && o->get_lnames()[0] != "help")
        args->command += fmt::format(" --{} {}", o->get_lnames()[0], o->as<std::string>());
    return run_zoo(*args);
  };
}

}  // namespace assay::cli
