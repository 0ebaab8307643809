#include "fuzz/campaign.h"

#include <chrono>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "case/rng.h"
#include "core/build_info.h"
#include "core/deadline.h"
#include "core/error.h"
#include "core/host_memory.h"
#include "exec/executor.h"
#include "exec/oom_retry.h"
#include "fuzz/corpus.h"
#include "fuzz/feedback.h"
#include "fuzz/limits.h"
#include "ops/op.h"
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
  SmallestFailing smallest;  // probes below the shrunk sizes (not for hangs)
  Case shrunk;               // the raw case when it was not shrunk
};

// A case of the campaign's own that its deadline (or the watchdog) stopped.
struct Unfinished {
  Case c;
  double started = 0, stopped = 0;  // campaign seconds
  fs::path case_file;
  std::string why;
};

using Lock = std::unique_lock<std::timed_mutex>;

// libFuzzer calls plain functions: the campaign lives in one global.
struct Campaign {
  Spec spec;
  const Op* op = nullptr;  // op_of(spec)
  CampaignOptions opt;
  CodecLimits limits;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Runner> runner;
  ExecOptions exec;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  int64_t cases = 0, rejected = 0;
  int64_t huge_cases = 0;   // cases with a size past the ordinary limit (cuda only)
  double huge_seconds = 0;  // the time they took, kept under opt.huge_share of the whole
  double summary_written = 0;  // when the summary file was last brought up to date
  std::set<std::string> raw_signatures, signatures;  // before and after shrinking
  std::vector<Found> found;
  bool merging = false;  // libFuzzer's merge: features only, failures are not this run's business
  // The state above, shared with the watchdog thread: the main thread holds
  // it except while a case runs (run_unlocked), so the watchdog can end the
  // campaign then.
  std::timed_mutex mutex;
  Deadline deadline;        // start + --time: cases running then are stopped
  HostMemoryCap host;       // --host-memory-limit, less what set-up took
  int64_t rejected_memory = 0;  // cases that would not fit the host memory left
  std::optional<Case> running;  // the campaign's own case now running (not a shrink attempt)
  double running_since = 0;
  std::optional<Unfinished> unfinished;
  std::optional<Found> pending;  // a new failure being shrunk, not yet recorded
  std::string stopped;      // why the watchdog ended the campaign early; empty: it did not

  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
  // With a worker where planning pays, a small case's calls take one
  // exchange (exec/executor.h). While other processes hold the device's
  // memory, a case waits for it within the campaign's time (exec/oom_retry.h).
  CaseOutcome run(const Case& c) {
    const auto end = deadline.set() ? deadline.at : Deadline::in(opt.seconds).at;  // a merge has no deadline
    return run_when_room(*backend, end, *op, c, [&](const Case& x) {
      return opt.isolation == Isolation::worker && planning_pays(backend->kind())
                 ? run_case_planned(*op, *backend, *runner, x, exec)
                 : run_case(*op, *backend, *runner, x, exec);
    });
  }
  int64_t infrastructure = 0;     // cases not run: the device's memory stayed short
  std::string last_infrastructure;  // the last one's message, with the memory figures
  // run() with the state unlocked, so the watchdog can end the campaign
  // meanwhile; `own`: a case of the campaign's (not a shrink attempt), recorded
  // as unfinished if it is stopped.
  CaseOutcome run_unlocked(Lock& lock, const Case& c, bool own) {
    if (own) running = c, running_since = elapsed();
    CaseOutcome o;
    {
      lock.unlock();
      struct Relock {
        Lock& l;
        ~Relock() { l.lock(); }
      } relock{lock};
      o = run(c);
    }
    if (own) running.reset();
    return o;
  }
  // The case that was running, saved like the failing ones (no result is lost).
  void record_unfinished(const std::string& why) {
    if (!running) return;
    Unfinished u{*running, running_since, elapsed(), {}, why};
    try {
      u.case_file = save_unfinished_case(kernel_dir(), spec, u.c, cases, "-fuzz",
                                         fmt::format("{} after {:.1f} s of it", why, u.stopped - u.started));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "assay fuzz: %s: the unfinished case was not saved: %s\n", spec.name.c_str(), e.what());
    }
    unfinished = std::move(u);
    running.reset();
  }
  // The failure being shrunk when the campaign must end: kept as found.
  void keep_pending(const std::string& why) {
    if (!pending) return;
    Found f = std::move(*pending);
    pending.reset();
    f.signature = failure_signature(f.c, f.outcome.verdict);
    f.explanation = fmt::format("not shrunk: {}\n", why);
    try {
      f.case_file = save_case(kernel_dir(), spec, f.c, f.outcome, int64_t(found.size()), "-fuzz");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "assay fuzz: %s: a failure was not saved: %s\n", spec.name.c_str(), e.what());
    }
    found.push_back(std::move(f));
  }
  fs::path kernel_dir() const {
    return opt.job < 0 ? opt.out_dir / spec.name : opt.out_dir / spec.name / fmt::format("job-{}", opt.job);
  }
};
Campaign* campaign = nullptr;

// The smallest failing sizes before (or without) a search: the case's own, none exact.
SmallestFailing unsearched(const Case& c) {
  SmallestFailing s;
  for (const auto& x : c.sizes) s.sizes.push_back(x.value);
  s.exact.assign(c.sizes.size(), false);
  return s;
}
constexpr double kSummaryEvery = 5;  // seconds between updates of fuzz-summary.json during a campaign

void write_summary(bool final);
[[noreturn]] void finish();

int run_one(const uint8_t* data, size_t size) {
  Campaign& cp = *campaign;
  const Op& op = *cp.op;
  Lock lock(cp.mutex);
  // libFuzzer looks at its clock only between inputs, and its clock started
  // after set-up: the campaign ends itself at its deadline.
  if (cp.deadline.passed()) finish();
  Case raw = op.decode(data, size, cp.spec, cp.limits);
  raw.seed = mix64(raw.seed ^ (uint64_t(cp.opt.shard) << 48));  // disjoint seed spaces per shard
  std::optional<Case> c = op.fit_requires(raw, cp.spec);
  if (!c) {
    ++cp.rejected;
    return -1;  // outside the spec: not worth keeping
  }
  // Huge cases (cuda) cost seconds each: only where they still fit after
  // fit_requires, and only while they have taken less than their share of the
  // time, so ordinary cases keep their throughput.
  const bool huge = op.is_huge(*c, cp.limits);
  if (huge && (!op.huge_case_fits(*c, cp.limits.huge) ||
               (!cp.merging && cp.huge_seconds > cp.opt.huge_share * cp.elapsed()))) {
    ++cp.rejected;
    return -1;
  }
  // The harness's host copies of the case must fit what the cap leaves now.
  if (!cp.host.fits(op.host_bytes(*c, cp.backend->kind()))) {
    ++cp.rejected, ++cp.rejected_memory;
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
    o = cp.run_unlocked(lock, *c, true);
  } catch (const OutOfMemory& e) {
    // The memory did not come back in time: the machine's fault, on record.
    cp.running.reset();
    ++cp.infrastructure, cp.last_infrastructure = e.what();
    std::fprintf(stderr, "assay fuzz: %s: a case not run: %s\n", cp.spec.name.c_str(), e.what());
    return -1;
  } catch (const DeadlineReached& e) {
    cp.record_unfinished(e.what());
    finish();
  }
  ++cp.cases;
  // A scheduler's time limit ends a campaign with SIGTERM or SIGKILL, and
  // libFuzzer then exits without our final summary: keep the file at most
  // a few seconds behind.
  if (!cp.merging && cp.elapsed() - cp.summary_written > kSummaryEvery) write_summary(false);
  record_features(op, *c, o);
  if (o.verdict == Verdict::pass || cp.merging) return 0;
  // A raw signature seen before is the same failure again: skip it cheaply.
  // A new one is shrunk, and the shrunk case's signature decides whether it
  // is a new failure (many raw shapes shrink to the same bug).
  if (!cp.raw_signatures.insert(failure_signature(*c, o.verdict)).second) return 0;
  Found f{{}, cp.elapsed(), cp.cases, *c, o, {}, {}, {}, 0.0, {}, *c};
  // Until it is recorded, the failure waits where the watchdog can save it.
  cp.pending = f;
  struct ClearPending {
    Campaign& cp;
    ~ClearPending() { cp.pending.reset(); }
  } clear_pending{cp};
  Case key = *c;
  f.smallest = unsearched(*c);
  if (const int attempts = shrink_attempts_for(o.verdict, cp.opt.isolation == Isolation::worker,
                                               cp.opt.shrink_attempts)) {
    CaseProbe probe = [&](const Case& x) { return cp.run_unlocked(lock, x, false); };
    const double s0 = cp.elapsed();
    try {
      // Huge cases cost seconds each: shrinking one failure gets at most a
      // quarter of the campaign's time (30 s at least), and so does the
      // search for the smallest failing sizes; neither goes past the
      // deadline (an attempt running then is stopped, the best case kept).
      const double shrink_seconds = std::min(std::max(30.0, 0.25 * cp.opt.seconds), cp.deadline.left());
      ShrinkResult s = shrink(op, cp.spec, *c, o, probe, attempts, shrink_seconds);
      f.shrink_seconds = cp.elapsed() - s0;
      key = s.shrunk;
      f.explanation = explain(s);
      if (cp.signatures.count(failure_signature(key, o.verdict))) return 0;
      f.shrunk_file =
          save_case(cp.kernel_dir(), cp.spec, s.shrunk, s.outcome, int64_t(cp.found.size()), "-fuzz-shrunk", s.notes);
      // For the acceptance check (shrunk sizes within 2x of the smallest failing):
      // a few dozen cheap probes, once per distinct failure. Out of memory
      // there leaves the shrunk case as it is.
      try {
        f.smallest = smallest_failing(op, cp.spec, key, o.verdict, probe, 64, std::min(shrink_seconds, cp.deadline.left()));
      } catch (const OutOfMemory& e) {
        f.smallest = unsearched(key);  // upper bounds: the shrunk sizes
        f.explanation += fmt::format("smallest failing sizes not searched: {}\n", e.what());
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
  if (cp.deadline.passed()) finish();
  return 0;
}

// The case's sizes by name, e.g. {"m": 3, "n": 65, "k": 8} for GEMM.
nlohmann::json sizes_json(const Case& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& s : c.sizes) j[s.name] = s.value;
  return j;
}

// One value per size of `c`, in its order, keyed by the size's name.
template <class T>
nlohmann::json per_size_json(const Case& c, const std::vector<T>& values) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t i = 0; i < c.sizes.size() && i < values.size(); ++i) j[c.sizes[i].name] = T(values[i]);
  return j;
}

nlohmann::json failure_json(const Found& f) {
  const Case& s = f.shrunk;
  return {{"signature", f.signature}, {"seconds", f.seconds}, {"cases", f.cases},
          {"verdict", name(f.outcome.verdict)}, {"case", describe(f.c)}, {"case_file", f.case_file.string()},
          {"shrunk_case_file", f.shrunk_file.string()}, {"explanation", f.explanation},
          {"shrink_seconds", f.shrink_seconds}, {"shrunk_dims", sizes_json(s)},
          {"smallest_failing_dims", per_size_json(s, f.smallest.sizes)},
          {"smallest_exact", per_size_json(s, f.smallest.exact)}};
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
  // The promises: --time (and its slack), host and device memory.
  j["time_seconds"] = cp.opt.seconds;
  j["deadline_slack_seconds"] = deadline_slack(cp.opt.seconds);
  j["unfinished_case"] = nlohmann::json();
  if (const auto& u = cp.unfinished)
    j["unfinished_case"] = {{"case", describe(u->c)}, {"dims", sizes_json(u->c)},
                            {"case_file", u->case_file.string()}, {"started_seconds", u->started},
                            {"stopped_seconds", u->stopped}, {"why", u->why}};
  j["host_memory"] = {{"limit_bytes", cp.host.limit}, {"baseline_bytes", cp.host.baseline},
                      {"peak_rss_bytes", peak_resident_bytes()}};
  j["memory_per_case_bytes"] = double(cp.backend->memory_budget());
  j["rejected_for_memory"] = cp.rejected_memory;
  j["stopped"] = cp.stopped.empty() ? nlohmann::json() : nlohmann::json(cp.stopped);
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
  if (cp.unfinished)
    fmt::print("[assay fuzz] {}: unfinished: {} ({})\n  __REPRO: assay repro {}\n", cp.spec.name,
               describe(cp.unfinished->c), cp.unfinished->why, cp.unfinished->case_file.string());
  if (!cp.stopped.empty()) fmt::print(stderr, "assay fuzz: {}: stopped early: {}\n", cp.spec.name, cp.stopped);
  std::fflush(stdout);
}

// Ends the campaign with its final summary; the caller holds the state (or
// could not have it). libFuzzer's exit status is its own; ours says whether
// a failure was found (3 when stopped for memory without one).
[[noreturn]] void finish() {
  write_summary(true);
  std::fflush(nullptr);
  const Campaign& cp = *campaign;
  std::_Exit(!cp.found.empty() ? exit_kernel_failed : cp.stopped.empty() ? exit_pass : exit_infrastructure);
}

// libFuzzer exits when its own time is up (atexit).
[[noreturn]] void exit_with_verdict() {
  Lock lock(campaign->mutex, std::defer_lock);
  (void)lock.try_lock_for(std::chrono::seconds(2));
  finish();
}

// The promise's last line: whatever the main thread is doing (a call in
// process, which cannot be stopped; harness work between the deadline's
// checks), the campaign ends with its summary 2 s before the slack runs out;
// and at once when the process holds more host memory than its limit (an
// estimate was wrong, or an in-process candidate took it).
void watchdog() {
  Campaign& cp = *campaign;
  const Deadline last{cp.deadline.at + std::chrono::duration_cast<Deadline::Clock::duration>(
                                           std::chrono::duration<double>(deadline_slack(cp.opt.seconds) - 2))};
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const double rss = resident_bytes();
    const bool over = rss > cp.host.limit;
    if (!over && !last.passed()) continue;
    Lock lock(cp.mutex, std::defer_lock);
    if (!lock.try_lock_for(std::chrono::seconds(1))) {
      // The main thread is stuck holding the state: the summary on disk (at
      // most a few seconds old) stands.
      cp.runner->kill_now();
      std::fprintf(stderr, "assay fuzz: %s: ended by its watchdog without a final summary\n", cp.spec.name.c_str());
      std::_Exit(exit_infrastructure);
    }
    cp.runner->kill_now();  // a worker still in a call goes too
    if (over)
      cp.stopped = fmt::format("the process held {}, over its host memory limit of {}", gib(rss), gib(cp.host.limit));
    cp.record_unfinished(over ? "stopped: the campaign went over its host memory limit"
                              : "still running at the end of the campaign's time and slack (in process, a call "
                                "cannot be stopped sooner)");
    cp.keep_pending(over ? "the campaign went over its host memory limit while shrinking it"
                         : "the campaign's time ran out while shrinking it");
    finish();
  }
}

}  // namespace

namespace {

// What campaigns and merges share: the kernel loaded, its runner, the features.
void set_up(const Spec& spec, const CampaignOptions& opt) {
  static Campaign cp;
  campaign = &cp;
  cp.spec = spec;
  cp.op = &op_of(cp.spec);  // the op is made before anything is loaded: an unknown one is bad input
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
  cp.runner = device_retry(*cp.backend, end).run([&] {  // a full device is waited for, within --time
    return make_runner(spec, *cp.backend, kernel, isolate, cp.kernel_dir());
  });
  cp.exec = ExecOptions{spec.compute, cp.op->default_scale(), spec.deterministic, false, opt.timeout_s};
  cp.exec.subnormals = spec.subnormals;
  // What set-up took (libraries, the CUDA context, the kernel) stays out of
  // the cases' share of the host memory limit; huge cases are drawn only
  // where both it and the device's budget hold them.
  cp.host = HostMemoryCap::measure(opt.host_memory_limit > 0 ? opt.host_memory_limit : default_host_memory_limit());
  cp.limits.huge.max_host_bytes = cp.host.for_cases();
  enable_features(opt.features, cp.limits);
}

// The caps, as the campaign starts.
void print_limits() {
  const Campaign& cp = *campaign;
  const double budget = double(cp.backend->memory_budget());
  fmt::print("[assay fuzz] {}: --time {:.0f} s, ends within {:.0f} s; host memory limit {} ({} held after set-up); "
             "{}\n",
             cp.spec.name, cp.opt.seconds, cp.opt.seconds + deadline_slack(cp.opt.seconds), gib(cp.host.limit),
             gib(cp.host.baseline),
             cp.backend->kind() == BackendKind::cuda
                 ? fmt::format("device memory share {} (ASSAY_DEVICE_MEMORY_GIB sets it)", gib(budget))
                 : fmt::format("host backend buffers at most {} a case", gib(budget)));
  std::fflush(stdout);
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
  Campaign& cp = *campaign;
  // Set-up counts against --time: the promise is about the command's wall time.
  cp.deadline = Deadline{cp.start + std::chrono::duration_cast<Deadline::Clock::duration>(
                                        std::chrono::duration<double>(opt.seconds))};
  cp.runner->set_deadline(cp.deadline);
  cp.exec.deadline = cp.deadline;
  print_limits();
  std::thread(watchdog).detach();
  fs::path corpus = opt.corpus_dir.empty() ? campaign->kernel_dir() / "fuzz-corpus" : opt.corpus_dir;
  fs::create_directories(corpus);
  seed_fuzz_corpus(corpus, *cp.op, spec, campaign->limits);
  std::atexit(exit_with_verdict);  // libFuzzer exits when the time is up
  drive({"assay-fuzz", fmt::format("-max_total_time={}", std::max(1, int(opt.seconds))),
         fmt::format("-seed={}", (opt.seed * uint64_t(opt.shards) + uint64_t(opt.shard)) % 4000000000u + 1),
         // The watchdog keeps the memory limit, and the deadline the time:
         // libFuzzer's own limits would end the process without a summary.
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

// The op's kernel-aware moves most of the time; libFuzzer's byte-level ones otherwise.
// Weak: the harness library is linked whole (ops register themselves), and the
// fuzz lab (bench/fuzz_lab.cpp) brings a mutator of its own.
extern "C" __attribute__((weak)) size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  using namespace assay::fuzz;
  if (!campaign || !campaign->op || seed % 4 == 0) return LLVMFuzzerMutate(data, size, max_size);
  const assay::Op& op = *campaign->op;
  auto c = op.decode(data, size, campaign->spec, campaign->limits);
  auto bytes = op.encode(op.mutate(c, assay::mix64(seed), campaign->limits), campaign->limits);
  size_t n = std::min(bytes.size(), max_size);
  std::memcpy(data, bytes.data(), n);
  return n;
}
