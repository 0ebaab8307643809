// `assay fuzz SPEC... --time DURATION`: a coverage-guided campaign per kernel
// (fuzz/campaign.h), each in its own process. Exit 1 when any failure was
// found, 0 when none, 2 on bad input.
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "fuzz/campaign.h"

namespace assay::cli {
namespace {

struct FuzzArgs {
  std::vector<std::string> specs;
  std::string time = "60s", shard = "0/1", corpus, out = "assay-out", cache_dir, isolation = "worker";
  uint64_t seed = 1;
  int64_t max_dim = 0;
  bool no_features = false;
  double timeout = 0;
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

int run_fuzz(const FuzzArgs& a) {
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
  opt.isolation = a.isolation == "in-process" ? Isolation::in_process : Isolation::worker;
  opt.loader.cache_dir = a.cache_dir;
  std::vector<Spec> specs;
  for (auto& f : a.specs) specs.push_back(load_spec(f));  // all bad input is reported before any campaign
  int worst = exit_pass;
  for (const Spec& spec : specs) {
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid < 0) throw InfraError("fork failed");
    if (pid == 0) {
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
    int status = 0;
    waitpid(pid, &status, 0);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : exit_infrastructure;
    if (!WIFEXITED(status)) fmt::print(stderr, "assay fuzz: the campaign for {} died (status {})\n", spec.name, status);
    worst = worse_exit(worst, code);
  }
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
  c->add_option("--corpus", a->corpus, "libFuzzer corpus folder (default OUT/<kernel>/fuzz-corpus)");
  c->add_option("--out", a->out, "folder for failures and summaries (default assay-out)");
  c->add_option("--max-dim", a->max_dim, "largest dimension tried (default 160 host, 1024 GPU)")
      ->check(CLI::Range(int64_t(1), int64_t(65535)));
  c->add_flag("--no-features", a->no_features, "no extra-counter feedback (to measure what it is worth)");
  c->add_option("--isolation", a->isolation, "worker (default for host kernels) | in-process")
      ->check(CLI::IsMember({"worker", "in-process"}));
  c->add_option("--timeout", a->timeout, "seconds a call may take before it is a hang (default: scaled)")
      ->check(CLI::PositiveNumber);
  c->add_option("--cache-dir", a->cache_dir, "compiled-kernel cache (default ~/.cache/assay)");
  return [a] { return run_fuzz(*a); };
}

}  // namespace assay::cli
