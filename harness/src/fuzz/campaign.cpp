#include "fuzz/campaign.h"

#include <chrono>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "case/rng.h"
#include "core/build_info.h"
#include "core/error.h"
#include "exec/executor.h"
#include "exec/oom_retry.h"
#include "fuzz/case_codec.h"
#include "fuzz/corpus.h"
#include "fuzz/feedback.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_tolerance.h"
#include "shrink/shrinker.h"
#include "shrink/smallest.h"

extern "C" int LLVMFuzzerRunDriver(int* argc, char*** argv, int (*cb)(const uint8_t*, size_t));
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace assay::fuzz {
namespace fs = std::filesystem;
namespace {

struct Found {
  std::string signature;
  double seconds;
  int64_t cases;  // run before it was found
  Case c;
  CaseOutcome outcome;
  fs::path case_file, shrunk_file;
  std::string explanation;
  double shrink_seconds = 0;
  SmallestFailing smallest;  // probes below the shrunk dims (not for hangs)
  Case shrunk;               // the raw case when it was not shrunk
};

// libFuzzer calls plain functions: the campaign lives in one global.
struct Campaign {
  Spec spec;
  CampaignOptions opt;
  CodecLimits limits;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Runner> runner;
  ExecOptions exec;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int64_t cases = 0, rejected = 0;
  int64_t huge_cases = 0;   // cases with a dimension past the ordinary limit (cuda only)
  double huge_seconds = 0;  // the time they took, kept under opt.huge_share of the whole
  double summary_written = 0;  // when the summary file was last brought up to date
  std::set<std::string> raw_signatures, signatures;  // before and after shrinking
  std::vector<Found> found;
  bool merging = false;  // libFuzzer's merge: features only, failures are not this run's business

  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
  // With a worker where planning pays, a small case's calls take one
  // exchange (exec/executor.h). While other processes hold the device's
  // memory, a case waits for it within the campaign's time (exec/oom_retry.h).
  CaseOutcome run(const Case& c) {
    const auto end = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(opt.seconds));
    return run_when_room(*backend, oom_deadline(end), c, [&](const Case& x) {
      return opt.isolation == Isolation::worker && planning_pays(backend->kind())
                 ? run_case_planned(*backend, *runner, x, exec)
                 : run_case(*backend, *runner, x, exec);
    });
  }
  int64_t infrastructure = 0;     // cases not run: the device's memory stayed short
  std::string last_infrastructure;  // the last one's message, with the memory figures
  fs::path kernel_dir() const {
    return opt.job < 0 ? opt.out_dir / spec.name : opt.out_dir / spec.name / fmt::format("job-{}", opt.job);
  }
};
Campaign* campaign = nullptr;
constexpr double kSummaryEvery = 5;  // seconds between updates of fuzz-summary.json during a campaign

void write_summary(bool final);

int run_one(const uint8_t* data, size_t size) {
  Campaign& cp = *campaign;
  Case raw = decode(data, size, cp.spec, cp.limits);
  raw.seed = mix64(raw.seed ^ (uint64_t(cp.opt.shard) << 48));  // disjoint seed spaces per shard
  std::optional<Case> c = gemm::fit_requires(raw, cp.spec);
  if (!c) {
    ++cp.rejected;
    return -1;  // outside the spec: not worth keeping
  }
  // Huge cases (cuda) cost seconds each: only where they still fit after
  // fit_requires, and only while they have taken less than their share of the
  // time, so ordinary cases keep their throughput.
  const bool huge = is_huge(*c, cp.limits);
  if (huge && (!gemm::huge_case_fits(*c, cp.limits.huge) ||
               (!cp.merging && cp.huge_seconds > cp.opt.huge_share * cp.elapsed()))) {
    ++cp.rejected;
    return -1;
  }
  const double t0 = cp.elapsed();
  struct HugeClock {  // every return below counts the huge case's time, shrinking included
    Campaign& cp;
    bool huge;
    double t0;
    ~HugeClock() {
      if (huge) cp.huge_seconds += cp.elapsed() - t0, ++cp.huge_cases;
    }
  } clock{cp, huge, t0};
  CaseOutcome o;
  try {
    o = cp.run(*c);
  } catch (const OutOfMemory& e) {
    // The memory did not come back in time: the machine's fault, on record.
    ++cp.infrastructure, cp.last_infrastructure = e.what();
    std::fprintf(stderr, "assay fuzz: %s: a case not run: %s\n", cp.spec.name.c_str(), e.what());
    return -1;
  }
  ++cp.cases;
  // A scheduler's time limit ends a campaign with SIGTERM or SIGKILL, and
  // libFuzzer then exits without our final summary: keep the file at most
  // a few seconds behind.
  if (!cp.merging && cp.elapsed() - cp.summary_written > kSummaryEvery) write_summary(false);
  record_features(*c, o);
  if (o.verdict == Verdict::pass || cp.merging) return 0;
  // A raw signature seen before is the same failure again: skip it cheaply.
  // A new one is shrunk, and the shrunk case's signature decides whether it
  // is a new failure (many raw shapes shrink to the same bug).
  if (!cp.raw_signatures.insert(failure_signature(*c, o.verdict)).second) return 0;
  Found f{{}, cp.elapsed(), cp.cases, *c, o, {}, {}, {}, 0.0, {}, *c};
  Case key = *c;
  f.smallest.dims = {c->m, c->n, c->k};
  if (const int attempts = shrink_attempts_for(o.verdict, cp.opt.isolation == Isolation::worker,
                                               cp.opt.shrink_attempts)) {
    CaseProbe probe = [&](const Case& x) { return cp.run(x); };
    const double s0 = cp.elapsed();
    try {
      // Huge cases cost seconds each: shrinking one failure gets at most a
      // quarter of the campaign's time (30 s at least), and so does the
      // search for the smallest failing dimensions.
      const double shrink_seconds = std::max(30.0, 0.25 * cp.opt.seconds);
      ShrinkResult s = shrink(cp.spec, *c, o, probe, attempts, shrink_seconds);
      f.shrink_seconds = cp.elapsed() - s0;
      key = s.shrunk;
      f.explanation = explain(s);
      if (cp.signatures.count(failure_signature(key, o.verdict))) return 0;
      f.shrunk_file =
          save_case(cp.kernel_dir(), cp.spec, s.shrunk, s.outcome, int64_t(cp.found.size()), "-fuzz-shrunk", s.notes);
      // For the acceptance check (shrunk dims within 2x of the smallest failing):
      // a few dozen cheap probes, once per distinct failure. Out of memory
      // there leaves the shrunk case as it is.
      try {
        f.smallest = smallest_failing(cp.spec, key, o.verdict, probe, 64, shrink_seconds);
      } catch (const OutOfMemory& e) {
        f.smallest = SmallestFailing{{key.m, key.n, key.k}, {}, 0};  // upper bounds: the shrunk dims
        f.explanation += fmt::format("smallest failing dimensions not searched: {}\n", e.what());
      }
    } catch (const OutOfMemory& e) {
      // The device's memory is shared: the failure is kept as found, not lost.
      f.shrink_seconds = cp.elapsed() - s0;
      key = *c;
      f.explanation = fmt::format("not shrunk: {}\n", e.what());
    }
  }
  f.signature = failure_signature(key, o.verdict);
  f.shrunk = key;
  if (!cp.signatures.insert(f.signature).second) return 0;
  f.case_file = save_case(cp.kernel_dir(), cp.spec, *c, o, int64_t(cp.found.size()), "-fuzz");
  const std::string& sig = f.signature;
  fmt::print("[assay fuzz] {}: new failure #{} after {:.1f} s and {} cases: {}\n  {}\n  {}__REPRO: assay repro {}\n",
             cp.spec.name, cp.found.size() + 1, f.seconds, cp.cases, sig, describe(*c), f.explanation,
             (f.shrunk_file.empty() ? f.case_file : f.shrunk_file).string());
  std::fflush(stdout);
  cp.found.push_back(std::move(f));
  write_summary(false);  // on disk now: a campaign that dies later keeps what it found
  return 0;
}

nlohmann::json dims_json(const std::array<int64_t, 3>& d) { return {{"m", d[0]}, {"n", d[1]}, {"k", d[2]}}; }

nlohmann::json failure_json(const Found& f) {
  const Case& s = f.shrunk;
  return {{"signature", f.signature}, {"seconds", f.seconds}, {"cases", f.cases},
          {"verdict", name(f.outcome.verdict)}, {"case", describe(f.c)}, {"case_file", f.case_file.string()},
          {"shrunk_case_file", f.shrunk_file.string()}, {"explanation", f.explanation},
          {"shrink_seconds", f.shrink_seconds}, {"shrunk_dims", dims_json({s.m, s.n, s.k})},
          {"smallest_failing_dims", dims_json(f.smallest.dims)},
          {"smallest_exact", {{"m", f.smallest.exact[0]}, {"n", f.smallest.exact[1]}, {"k", f.smallest.exact[2]}}}};
}

// `final`: the campaign is over (prints the one-line summary too).
void write_summary(bool final) {
  Campaign& cp = *campaign;
  nlohmann::json failures = nlohmann::json::array();
  for (auto& f : cp.found) failures.push_back(failure_json(f));
  const double s = cp.elapsed();
  const double first = cp.found.empty() ? -1.0 : cp.found.front().seconds;
  nlohmann::json j{{"kernel", cp.spec.name}, {"spec", cp.spec.file.string()}, {"seconds", s}, {"cases", cp.cases},
                   {"cases_per_second", s > 0 ? cp.cases / s : 0.0}, {"cases_per_s", s > 0 ? cp.cases / s : 0.0},
                   {"rejected_inputs", cp.rejected}, {"features", cp.opt.features}, {"finished", final},
                   {"huge_cases", cp.huge_cases}, {"huge_seconds", cp.huge_seconds},
                   {"infrastructure_errors", cp.infrastructure}, {"last_infrastructure_error", cp.last_infrastructure},
                   {"limits", {{"max_dim", cp.limits.max_dim}, {"max_work", cp.limits.max_work}, {"max_elements", cp.limits.max_elements},
                               {"huge", cp.limits.max_huge_work > 0 && cp.limits.huge.backend == BackendKind::cuda}}},
                   {"distinct_failures", cp.found.size()}, {"first_failure_seconds", first},
                   {"time_to_first_failure_s", cp.found.empty() ? nlohmann::json() : nlohmann::json(first)},
                   {"first_failure_cases", cp.found.empty() ? int64_t(-1) : cp.found.front().cases},
                   {"shrink_seconds", cp.found.empty() ? nlohmann::json() : nlohmann::json(cp.found.front().shrink_seconds)},
                   {"failures", failures}};
  j["build"] = build_json();
  if (cp.opt.job >= 0) j["job"] = cp.opt.job;
  fs::create_directories(cp.kernel_dir());
  {
    // Written aside and renamed: a kill in the middle leaves the last whole file.
    std::ofstream(cp.kernel_dir() / "fuzz-summary.json.part") << j.dump(2) << "\n";
  }
  std::error_code ec;  // a full disk costs this update, not the campaign
  fs::rename(cp.kernel_dir() / "fuzz-summary.json.part", cp.kernel_dir() / "fuzz-summary.json", ec);
  cp.summary_written = s;
  if (!final) return;
  fmt::print("[assay fuzz] {}: {} cases in {:.1f} s ({:.0f}/s), {} distinct failures{}\n", cp.spec.name, cp.cases, s,
             s > 0 ? cp.cases / s : 0.0, cp.found.size(),
             cp.found.empty() ? "" : fmt::format(", first after {:.1f} s", cp.found.front().seconds));
  std::fflush(stdout);
}

// libFuzzer's exit status is its own; ours says whether a failure was found.
[[noreturn]] void exit_with_verdict() {
  write_summary(true);
  std::fflush(nullptr);
  std::_Exit(campaign->found.empty() ? exit_pass : exit_kernel_failed);
}

}  // namespace

namespace {

// What campaigns and merges share: the kernel loaded, its runner, the features.
void set_up(const Spec& spec, const CampaignOptions& opt) {
  static Campaign cp;
  campaign = &cp;
  cp.spec = spec;
  cp.opt = opt;
  cp.backend = make_backend(spec.backend);
  const bool host = spec.backend == BackendKind::host;
  cp.limits = campaign_limits(cp.backend->kind(), double(cp.backend->memory_budget()));
  if (opt.max_dim > 0) cp.limits.max_dim = opt.max_dim;
  if (opt.max_work > 0) cp.limits.max_work = opt.max_work;
  if (opt.max_elements > 0) cp.limits.max_elements = opt.max_elements;
  cp.limits.max_huge_work = std::min(cp.limits.max_huge_work, limits_for(*cp.backend).max_work);
  const bool isolate = opt.isolation == Isolation::worker;
  LoaderOptions lo = opt.loader;
  lo.open = !isolate;
  if (!host) lo.cuda_arch = cuda_arch();
  LoadedKernel kernel = load_kernel(spec, lo);
  const auto end = cp.start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                  std::chrono::duration<double>(opt.seconds));
  cp.runner = device_retry(*cp.backend, oom_deadline(end)).run([&] {  // a full device is waited for
    return make_runner(spec, *cp.backend, kernel, isolate, cp.kernel_dir());
  });
  cp.exec = ExecOptions{spec.compute, gemm::kDefaultScale, spec.deterministic, false, opt.timeout_s};
  cp.exec.subnormals = spec.subnormals;
  enable_features(opt.features, cp.limits);
}

int drive(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = int(args.size());
  char** argvp = argv.data();
  return LLVMFuzzerRunDriver(&argc, &argvp, run_one);
}

}  // namespace

void run_campaign(const Spec& spec, const CampaignOptions& opt) {
  set_up(spec, opt);
  fs::path corpus = opt.corpus_dir.empty() ? campaign->kernel_dir() / "fuzz-corpus" : opt.corpus_dir;
  fs::create_directories(corpus);
  seed_fuzz_corpus(corpus, spec, campaign->limits);
  std::atexit(exit_with_verdict);  // libFuzzer exits when the time is up
  drive({"assay-fuzz", fmt::format("-max_total_time={}", std::max(1, int(opt.seconds))),
         fmt::format("-seed={}", (opt.seed * uint64_t(opt.shards) + uint64_t(opt.shard)) % 4000000000u + 1),
         "-max_len=64", "-timeout=100000", "-rss_limit_mb=0", "-print_final_stats=1", "-reload=0",
         // A huge case takes seconds by design: no slow-unit files, and any
         // artifact libFuzzer writes goes to the kernel's folder, not the cwd.
         "-report_slow_units=1000000", fmt::format("-artifact_prefix={}/", campaign->kernel_dir().string()),
         // Every seed stays in the corpus even when it adds no feature: with
         // --no-features libFuzzer would otherwise keep one input and mutate
         // only that, which is not the same campaign minus the feedback.
         "-keep_seed=1",
         corpus.string()});
  exit_with_verdict();
}

void run_merge(const Spec& spec, const CampaignOptions& opt, const std::vector<std::string>& argv) {
  set_up(spec, opt);
  campaign->merging = true;
  drive(argv);
  std::exit(0);  // libFuzzer exits itself after a merge; this is not expected
}

}  // namespace assay::fuzz

// Kernel-aware moves most of the time; libFuzzer's byte-level ones otherwise.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  using namespace assay::fuzz;
  if (!campaign || seed % 4 == 0) return LLVMFuzzerMutate(data, size, max_size);
  auto c = decode(data, size, campaign->spec, campaign->limits);
  auto bytes = encode(mutate(c, assay::mix64(seed), campaign->limits), campaign->limits);
  size_t n = std::min(bytes.size(), max_size);
  std::memcpy(data, bytes.data(), n);
  return n;
}
