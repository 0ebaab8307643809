// `assay corpus merge OUT IN...`: merges fuzz corpora (libFuzzer's -merge=1
// through the campaign's own driver and features, when --spec names the
// kernel; by content otherwise) or regression corpora of case files
// (deduplicated by case). fuzz/corpus.h says which is which.
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/error.h"
#include "fuzz/campaign.h"
#include "fuzz/corpus.h"
#include "fuzz/jobs.h"

namespace assay::cli {
namespace fs = std::filesystem;
namespace {

struct CorpusArgs {
  std::string out, spec, isolation = "worker", cache_dir;
  std::vector<std::string> ins, inner;  // inner: libFuzzer's arguments for the merge's inner step
};

std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

fuzz::CampaignOptions merge_options(const CorpusArgs& a) {
  fuzz::CampaignOptions opt;
  opt.isolation = a.isolation == "in-process" ? Isolation::in_process : Isolation::worker;
  opt.loader.cache_dir = a.cache_dir;
  opt.out_dir = fs::temp_directory_path() / "assay-merge";  // the worker's log only
  return opt;
}

// libFuzzer runs its merge's inner step as a shell command built from
// argv[0] and the flags; argv[0] is therefore this command, which comes back
// as `assay corpus merge-inner ... -- FLAGS`.
std::string inner_command(const CorpusArgs& a) {
  std::string cmd = sh_quote(fuzz::self_executable()) + " corpus merge-inner --spec " + sh_quote(a.spec) +
                    " --isolation " + a.isolation;
  if (!a.cache_dir.empty()) cmd += " --cache-dir " + sh_quote(a.cache_dir);
  return cmd + " --";
}

int libfuzzer_merge(const CorpusArgs& a, const std::vector<std::string>& argv) {
  Spec spec = load_spec(a.spec);
  std::fflush(nullptr);
  pid_t pid = fork();  // libFuzzer exits when the merge is done
  if (pid < 0) throw InfraError("fork failed");
  if (pid == 0) {
    try {
      fuzz::run_merge(spec, merge_options(a), argv);
    } catch (const std::exception& e) {
      fmt::print(stderr, "assay corpus: {}\n", e.what());
      std::_Exit(exit_infrastructure);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? exit_pass : exit_infrastructure;
}

int run_merge(const CorpusArgs& a) {
  auto kind = fuzz::CorpusKind::empty;
  std::vector<fs::path> ins;
  for (auto& in : a.ins) {
    auto k = fuzz::corpus_kind(in);
    if (k != fuzz::CorpusKind::empty && kind != fuzz::CorpusKind::empty && k != kind)
      throw InputError("corpus merge: " + in + " is not the same kind of corpus as the others (case files vs fuzz inputs)");
    if (k != fuzz::CorpusKind::empty) kind = k, ins.push_back(in);
  }
  fs::create_directories(a.out);
  if (kind == fuzz::CorpusKind::regression) {
    auto n = fuzz::merge_cases(a.out, ins);
    fmt::print("corpus merge: {} case files, {} added to {}, {} duplicates\n", n.seen, n.added, a.out, n.duplicates);
    return exit_pass;
  }
  if (a.spec.empty()) {
    auto n = fuzz::merge_by_content(a.out, ins);
    fmt::print("corpus merge: {} inputs, {} added to {}, {} duplicates (by content; --spec merges by features)\n",
               n.seen, n.added, a.out, n.duplicates);
    return exit_pass;
  }
  std::vector<std::string> argv = {inner_command(a), "-max_len=64", "-timeout=100000", "-rss_limit_mb=0", "-merge=1",
                                   a.out};
  for (auto& in : ins) argv.push_back(in.string());
  return libfuzzer_merge(a, argv);
}

}  // namespace

Command add_corpus(CLI::App& app) {
  auto a = std::make_shared<CorpusArgs>();
  CLI::App* c = app.add_subcommand("corpus", "corpus tools");
  c->require_subcommand(1);
  CLI::App* m = c->add_subcommand("merge", "merge fuzz corpora or regression corpora into OUT_DIR");
  m->add_option("out", a->out, "the merged corpus (may already hold inputs: they count first)")->required();
  m->add_option("ins", a->ins, "corpora to merge in")->required()->check(CLI::ExistingDirectory);
  m->add_option("--spec", a->spec, "fuzz corpora: keep inputs that add features on this kernel (libFuzzer -merge=1)")
      ->check(CLI::ExistingFile);
  m->add_option("--isolation", a->isolation, "worker (default for host kernels) | in-process")
      ->check(CLI::IsMember({"worker", "in-process"}));
  m->add_option("--cache-dir", a->cache_dir, "compiled-kernel cache (default ~/.cache/assay)");
  CLI::App* inner = c->add_subcommand("merge-inner", "")->group("");  // libFuzzer's inner merge step
  inner->add_option("--spec", a->spec)->required();
  inner->add_option("--isolation", a->isolation);
  inner->add_option("--cache-dir", a->cache_dir);
  inner->add_option("args", a->inner);
  return [a, m] {
    if (m->parsed()) return run_merge(*a);
    std::vector<std::string> argv = {"assay-merge-inner"};
    argv.insert(argv.end(), a->inner.begin(), a->inner.end());
    return libfuzzer_merge(*a, argv);
  };
}

}  // namespace assay::cli
