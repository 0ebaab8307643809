// `assay fuzz SPEC... --time DURATION`: a coverage-guided campaign per kernel
// (fuzz/campaign.h), each in its own process; with --jobs or --gpus, several
// processes per kernel sharing one corpus, merged into one summary
// (fuzz/jobs.h, fuzz/summary.h). Exit 1 when any failure was found, 0 when
// none, 2 on bad input, 3 when a campaign died.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/host_memory.h"
#include "fuzz/campaign.h"
#include "fuzz/jobs.h"
#include "fuzz/summary.h"

namespace assay::cli {
namespace fs = std::filesystem;
namespace {

struct FuzzArgs {
  std::vector<std::string> specs;
  std::string time = "60s", shard = "0/1", corpus, out = "assay-out", cache_dir, isolation = "worker", gpus, json;
  uint64_t seed = 1;
  int64_t max_dim = 0;
  bool no_features = false;
  double timeout = 0;
  double host_memory_limit_gib = 0;  // 0: default_host_memory_limit(); with --jobs N, a share of 1/N each
  int jobs = 0, job = -1;  // job: set on the processes --jobs starts
};

double parse_duration(const std::string& s) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (...) {
    throw InputError("--time: not a duration: '" + s + "' (e.g. 90, 60s, 10m, 2h)");
  }
  std::string unit = s.substr(used);
  double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (scale < 0 || !(v > 0)) throw InputError("--time: not a duration: '" + s + "' (e.g. 90, 60s, 10m, 2h)");
  return v * scale;
}

fuzz::CampaignOptions campaign_options(const FuzzArgs& a) {
  fuzz::CampaignOptions opt;
  opt.seconds = parse_duration(a.time);
  opt.seed = a.seed;
  if (std::sscanf(a.shard.c_str(), "%d/%d", &opt.shard, &opt.shards) != 2 || opt.shards < 1 || opt.shard < 0 ||
      opt.shard >= opt.shards)
    throw InputError("--shard: expected I/N with 0 <= I < N, got '" + a.shard + "'");
  opt.out_dir = a.out;
  opt.corpus_dir = a.corpus;
  opt.features = !a.no_features;
  opt.max_dim = a.max_dim;
  opt.timeout_s = a.timeout;
  opt.host_memory_limit = a.host_memory_limit_gib * double(size_t(1) << 30);
  opt.isolation = a.isolation == "in-process" ? Isolation::in_process : Isolation::worker;
  opt.loader.cache_dir = a.cache_dir;
  opt.job = a.job;
  return opt;
}

// Runs the campaign in this process (it never returns); errors become exit codes.
[[noreturn]] void campaign_here(const Spec& spec, const fuzz::CampaignOptions& opt) {
  try {
    fuzz::run_campaign(spec, opt);
  } catch (const InputError& e) {
    fmt::print(stderr, "assay fuzz: {}\n", e.what());
    std::_Exit(exit_bad_input);
  } catch (const std::exception& e) {
    fmt::print(stderr, "assay fuzz: {}\n", e.what());
    std::_Exit(exit_infrastructure);
  }
}

int one_process(const Spec& spec, const fuzz::CampaignOptions& opt) {
  std::fflush(nullptr);
  const pid_t self = getpid();
  pid_t pid = fork();
  if (pid < 0) throw InfraError("fork failed");
  if (pid == 0) {
    fuzz::die_with_parent(self);
    campaign_here(spec, opt);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) fmt::print(stderr, "assay fuzz: the campaign for {} died (status {})\n", spec.name, status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : exit_infrastructure;
}

nlohmann::json read_json(const fs::path& f) {
  std::ifstream in(f);
  return in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
}

// N processes for one kernel: job j gets shard I*N + j of N*N' (disjoint
// seed spaces), GPU gpus[j % G], the same corpus, its own output folder.
int many_processes(const FuzzArgs& a, const Spec& spec, const fuzz::CampaignOptions& opt,
                   const std::vector<std::string>& gpus, int jobs) {
  const fs::path kdir = opt.out_dir / spec.name;
  const std::string corpus = a.corpus.empty() ? (kdir / "fuzz-corpus").string() : a.corpus;
  fs::create_directories(corpus);
  std::vector<fuzz::JobPlan> plans;
  for (int j = 0; j < jobs; ++j) {
    fs::remove(kdir / fmt::format("job-{}", j) / "fuzz-summary.json");  // no stale result from an earlier run
    fuzz::JobPlan p{{"fuzz", spec.file.string(), "--time", a.time, "--seed", std::to_string(a.seed), "--shard",
                     fmt::format("{}/{}", opt.shard * jobs + j, opt.shards * jobs), "--corpus", corpus, "--out",
                     a.out, "--isolation", a.isolation, "--job", std::to_string(j)},
                    gpus.empty() ? "" : gpus[size_t(j) % gpus.size()]};
    if (a.max_dim > 0) p.args.insert(p.args.end(), {"--max-dim", std::to_string(a.max_dim)});
    if (a.timeout > 0) p.args.insert(p.args.end(), {"--timeout", fmt::format("{}", a.timeout)});
    // The limit is the command's: each of the jobs, side by side on this machine, gets its share.
    const double total = a.host_memory_limit_gib > 0 ? a.host_memory_limit_gib * double(size_t(1) << 30)
                                                     : default_host_memory_limit();
    p.args.insert(p.args.end(), {"--host-memory-limit", fmt::format("{}", total / jobs / double(size_t(1) << 30))});
    if (!a.cache_dir.empty()) p.args.insert(p.args.end(), {"--cache-dir", a.cache_dir});
    if (a.no_features) p.args.push_back("--no-features");
    plans.push_back(std::move(p));
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int> codes = fuzz::run_jobs(fuzz::self_executable(), plans);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<fuzz::JobResult> results;
  int worst = exit_pass;
  for (int j = 0; j < jobs; ++j) {
    results.push_back({j, codes[size_t(j)], read_json(kdir / fmt::format("job-{}", j) / "fuzz-summary.json")});
    if (codes[size_t(j)] < 0 || codes[size_t(j)] > exit_kernel_failed)
      fmt::print(stderr, "assay fuzz: job {} of {} ended with {} (its results so far are kept)\n", j, spec.name,
                 codes[size_t(j)]);
    worst = worse_exit(worst, codes[size_t(j)] < 0 ? int(exit_infrastructure) : codes[size_t(j)]);
  }
  nlohmann::json merged = fuzz::merge_summaries(results, wall);
  merged["kernel"] = spec.name;
  merged["spec"] = spec.file.string();
  if (!gpus.empty()) merged["gpus"] = gpus;
  std::ofstream(kdir / "fuzz-summary.json") << merged.dump(2) << "\n";
  fmt::print("[assay fuzz] {}: {} jobs, {} cases in {:.1f} s ({:.0f}/s), {} distinct failures\n", spec.name, jobs,
             merged["cases"].get<int64_t>(), wall, merged["cases_per_s"].get<double>(),
             merged["distinct_failures"].get<size_t>());
  // A found failure is the news even when another job died.
  return merged["distinct_failures"].get<size_t>() > 0 && worst == exit_infrastructure ? exit_kernel_failed : worst;
}

int run_fuzz(const FuzzArgs& a) {
  fuzz::CampaignOptions opt = campaign_options(a);
  std::vector<std::string> gpus = a.gpus.empty() ? std::vector<std::string>{} : fuzz::parse_gpu_list(a.gpus);
  const int jobs = a.jobs > 0 ? a.jobs : gpus.empty() ? 1 : int(gpus.size());
  std::vector<Spec> specs;
  for (auto& f : a.specs) specs.push_back(load_spec(f));  // all bad input is reported before any campaign
  if (a.job >= 0) campaign_here(specs.at(0), opt);       // one job of a --jobs parent
  int worst = exit_pass;
  nlohmann::json kernels = nlohmann::json::array();
  for (const Spec& spec : specs) {
    const bool many = jobs > 1 || !gpus.empty();
    worst = worse_exit(worst, many ? many_processes(a, spec, opt, gpus, jobs) : one_process(spec, opt));
    kernels.push_back(read_json(opt.out_dir / spec.name / "fuzz-summary.json"));
  }
  if (!a.json.empty())
    std::ofstream(a.json) << nlohmann::json{{"build", build_json()}, {"kernels", kernels}}.dump(2) << "\n";
  return worst;
}

}  // namespace

Command add_fuzz(CLI::App& app) {
  auto a = std::make_shared<FuzzArgs>();
  CLI::App* c = app.add_subcommand("fuzz", "coverage-guided fuzzing of kernels, time-boxed");
  c->add_option("specs", a->specs, "spec files")->required()->check(CLI::ExistingFile);
  c->add_option("--time", a->time, "campaign length per kernel: 90, 60s, 10m, 2h (default 60s)");
  c->add_option("--seed", a->seed, "seed (default 1)");
  c->add_option("--shard", a->shard, "I/N: this machine's part of the seed space (default 0/1)");
  c->add_option("--jobs", a->jobs, "campaign processes per kernel, sharing the corpus (default 1, or one per GPU)")
      ->check(CLI::Range(1, 256));
  c->add_option("--gpus", a->gpus, "GPU indices, e.g. 0,1,2,3: one job per GPU (CUDA_VISIBLE_DEVICES)");
  c->add_option("--job", a->job, "internal: this process is job J of a --jobs campaign")->group("");
  c->add_option("--corpus", a->corpus, "libFuzzer corpus folder (default OUT/<kernel>/fuzz-corpus)");
  c->add_option("--out", a->out, "folder for failures and summaries (default assay-out)");
  c->add_option("--json", a->json, "write every kernel's summary to this file");
  c->add_option("--max-dim", a->max_dim, "ordinary cases: every size below this (default 8192; the work is bounded too)")
      ->check(CLI::Range(int64_t(1), int64_t(65535)));
  c->add_flag("--no-features", a->no_features, "no extra-counter feedback (to measure what it is worth)");
  c->add_option("--isolation", a->isolation, "worker (default) | in-process")
      ->check(CLI::IsMember({"worker", "in-process"}));
  c->add_option("--timeout", a->timeout, "seconds a call may take before it is a hang (default: scaled)")
      ->check(CLI::PositiveNumber);
  c->add_option("--cache-dir", a->cache_dir, "compiled-kernel cache (default ~/.cache/assay)");
  c->add_option("--host-memory-limit", a->host_memory_limit_gib,
                "GiB of host memory a campaign may hold; cases that need more are not drawn (default: the smaller "
                "of 16 and a quarter of RAM; with --jobs N each job gets 1/N)")
      ->check(positive_gib());
  return [a] { return run_fuzz(*a); };
}

}  // namespace assay::cli
