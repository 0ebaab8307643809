#include "gate/gate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "core/deadline.h"
#include "core/error.h"
#include "core/host_memory.h"
#include "exec/oom_retry.h"
#include "exec/worker_runner.h"
#include "gate/journal.h"
#include "gate/sanitize.h"
#include "shrink/shrinker.h"
#include "ops/op.h"

namespace assay {
namespace fs = std::filesystem;

// Passing cases small enough to replay under a sanitizer (racecheck costs ~18x).
constexpr double kSanitizeSampleWork = double(1 << 22);
struct SampleCase {
  int64_t index;
  Case c;
  CaseOutcome outcome;
};

CaseLimits limits_for(const Backend& backend) {
  // The host runs candidates on a CPU core: keep its cases small enough for CI.
  if (backend.kind() == BackendKind::host) return {double(1 << 25), double(backend.memory_budget())};
  return {double(int64_t(1) << 41), double(backend.memory_budget())};
}

fs::path save_case(const fs::path& dir, const Spec& spec, const Case& c, const CaseOutcome& o, int64_t index,
                   const std::string& suffix, const std::vector<std::string>& notes) {
  return save_case_as(dir / fmt::format("case-{:04d}-{}{}.yaml", index, name(o.verdict), suffix), spec, c, o, notes);
}

// A case file: comment lines saying what happened (the headline, then any
// notes), the repro line, the case.
static fs::path write_case_file(const fs::path& file, const Spec& spec, const Case& c, std::string headline,
                                const std::vector<std::string>& notes = {}) {
  const fs::path dir = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  fs::create_directories(dir);
  std::ofstream out(file);
  for (char& ch : headline)  // a comment line: a kernel's message must not break the YAML
    if (ch == '\n' || ch == '\r') ch = ' ';
  out << "# " << headline << "\n";
  for (auto& n : notes) out << fmt::format("# {}\n", n);
  out << fmt::format("# repro: assay repro {}\n", file.string());
  out << to_yaml(c, fs::absolute(spec.file), fs::absolute(dir));
  if (!out) throw InfraError("cannot write " + file.string());
  return file;
}

fs::path save_case_as(const fs::path& file, const Spec& spec, const Case& c, const CaseOutcome& o,
                      const std::vector<std::string>& notes) {
  return write_case_file(file, spec, c, fmt::format("{} in call {}: {}", name(o.verdict), o.call, o.detail), notes);
}

fs::path save_unfinished_case(const fs::path& dir, const Spec& spec, const Case& c, int64_t index,
                              const std::string& suffix, const std::string& note) {
  return write_case_file(dir / fmt::format("case-{:04d}-unfinished{}.yaml", index, suffix), spec, c,
                         "unfinished: " + note);
}

std::unique_ptr<Runner> make_runner(const Spec& spec, Backend& backend, const LoadedKernel& kernel, bool isolate,
                                    const fs::path& log_dir, size_t device_memory_limit) {
  if (!isolate) return std::make_unique<InProcessRunner>(kernel.run);
  fs::create_directories(log_dir);
  WorkerOptions wo;
  wo.library = kernel.library, wo.entry = spec.entry, wo.log_file = log_dir / "worker.log";
  wo.device_memory_limit = device_memory_limit;
  auto worker = std::make_unique<WorkerRunner>(backend, wo);
  if (std::string why = worker->warm_up(); !why.empty()) {
    const std::string device = fmt::format("{}: the worker cannot set up the device: {}", spec.file.string(), why);
    if (worker->device_out_of_memory()) throw OutOfMemory(device);
    if (worker->device_unavailable()) throw InfraError(device);
    throw InputError(fmt::format("{}: the kernel cannot be loaded: {}", spec.file.string(), why));
  }
  return worker;
}

// Saved cases of one kernel (shrunk failures worth keeping fixed), in name order.
std::vector<Case> corpus_cases(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<Case> cases;
  for (auto& f : files) {
    Case c = load_case_file(f).c;  // a broken corpus file is bad input: InputError names it
    try {
      check_layouts(c);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", f.string(), e.what()));
    }
    c.origin = "corpus " + f.filename().string();
    cases.push_back(c);
  }
  return cases;
}

static void shrink_first_failure(const Spec& spec, const CaseProbe& probe, int attempts, double max_seconds,
                                 const fs::path& case_dir, int64_t index, CaseFailure& failure) {
  ShrinkResult s;
  try {
    s = shrink(op_of(spec), spec, failure.c, failure.outcome, probe, attempts, max_seconds);  // stops at the budget's end itself
  } catch (const OutOfMemory& e) {
    // The device's memory is shared: the failure stays as found, not lost.
    std::fprintf(stderr, "assay: %s: not shrunk: %s\n", spec.name.c_str(), e.what());
    return;
  }
  // Already as small as it gets: no second file, but the notes still tell.
  fs::path shrunk;
  if (!(s.shrunk == failure.c)) shrunk = save_case(case_dir, spec, s.shrunk, s.outcome, index, "-shrunk", s.notes);
  failure.shrunk = {shrunk, explain(s)};
}

// Failing cases (but hangs: a replay would only hang again) and a few small
// passing ones, spread over the run, go through compute-sanitizer.
static void replay_under_sanitizer(const Spec& spec, const GateOptions& opt, const std::vector<SampleCase>& passes,
                            KernelReport& report) {
  report.sanitizer_tool = opt.sanitize;
  report.sanitizer_note = sanitizer_unavailable();
  if (!report.sanitizer_note.empty()) return;
  std::vector<fs::path> files;
  for (auto& f : report.failures)
    if (f.outcome.verdict != Verdict::hang && !f.case_file.empty()) files.push_back(f.case_file);
  const size_t n = std::min(passes.size(), size_t(std::max(0, opt.sanitize_samples)));
  for (size_t j = 0; j < n; ++j) {
    const SampleCase& p = passes[j * passes.size() / n];
    files.push_back(save_case(opt.out_dir / spec.name, spec, p.c, p.outcome, p.index, "-sample"));
  }
  report.sanitizer = sanitize_cases(opt.sanitize, files, opt.loader.cache_dir);
  if (files.empty()) report.sanitizer_note = "no case to replay";
}

namespace {

// One kernel through the gate: set-up, then the cases (the corpus, the
// sweep, random ones) within its budget, each recorded as it finishes
// (journal, case file, report, the first failure shrunk).
class KernelGate {
 public:
  KernelGate(const Spec& spec, Backend& backend, const GateOptions& opt, Reporter& reporter)
      : spec_(spec), op_(op_of(spec)), backend_(backend), opt_(opt), reporter_(reporter), isolate_(opt.isolation == Isolation::worker),
        case_dir_(opt.out_dir / spec.name), spec_key_(spec.file.string()) {
    report_.name = spec.name;
    report_.spec_file = spec.file;
    report_.backend = std::string(name(spec.backend));
    report_.expect = spec.expect;
    report_.isolation = isolate_ ? "worker" : "in-process";
    // Small cases planned, this many per exchange with the worker (gate.h); 0: call by call.
    batch_ = isolate_ ? opt.batch.value_or(planning_pays(backend.kind()) ? kBatchCases : 0) : 0;
    exec_ = ExecOptions{spec.compute, opt.tolerance_scale.value_or(op_of(spec).default_scale()), spec.deterministic, false,
                        opt.timeout_s};
    exec_.subnormals = spec.subnormals;
    // The budget is a promise: a case still running when it is spent is
    // stopped (the worker killed), so the kernel ends within budget + slack.
    deadline_ = Deadline{start_ + std::chrono::duration_cast<Deadline::Clock::duration>(
                                      std::chrono::duration<double>(opt.budget_seconds))};
    exec_.deadline = deadline_;
  }

  KernelReport run() {
    reporter_.kernel_started(report_);
    if (set_up()) run_cases_of_kernel();
    report_.seconds = elapsed();
    report_.memory_waits = waits_.times, report_.memory_wait_seconds = waits_.seconds;
    reporter_.kernel_done(report_);
    return std::move(report_);
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  // A case once the device has room for it, waiting (within the budget)
  // while other processes hold the memory.
  CaseOutcome attempt(const Case& c, bool planned) {
    return run_when_room(
        backend_, deadline_.at, op_, c,
        [&](const Case& x) {
          return planned ? run_case_planned(op_, backend_, *runner_, x, exec_) : run_case(op_, backend_, *runner_, x, exec_);
        },
        &waits_);
  }

  // Loads the kernel and its runner; false (the report says why) when it cannot.
  bool set_up() {
    try {
      if (!isolate_ && (spec_.expect == "crash" || spec_.expect == "hang"))
        throw InputError(fmt::format("{}: a kernel expected to {} must run in a worker process "
                                     "(--isolation worker, the default)", spec_.file.string(), spec_.expect));
      LoaderOptions lo = opt_.loader;
      lo.open = !isolate_;
      kernel_ = load_kernel(spec_, lo);
      // A worker whose context found the device full waits, like a case (exec/oom_retry.h).
      runner_ = device_retry(backend_, deadline_.at, 0, &waits_).run([&] {
        return make_runner(spec_, backend_, kernel_, isolate_, case_dir_, opt_.device_memory_limit);
      });
      runner_->set_deadline(deadline_);
      host_ = HostMemoryCap::measure(opt_.host_memory_limit > 0 ? opt_.host_memory_limit : default_host_memory_limit());
      report_.host_memory_limit = host_.limit, report_.host_memory_baseline = host_.baseline;
      report_.memory_per_case = double(backend_.memory_budget());
    } catch (const InputError& e) {
      report_.setup_error = e.what(), report_.setup_exit = exit_bad_input;
    } catch (const InfraError& e) {
      report_.setup_error = e.what(), report_.setup_exit = exit_infrastructure;
    }
    return report_.setup_error.empty();
  }

  void run_cases_of_kernel() {
    const CaseLimits limits = limits_for(backend_);
    const bool host = backend_.kind() == BackendKind::host;
    const GenLimits gen{host ? 160 : 2048, host ? double(1 << 20) : double(1 << 30)};
    // The kernel's regression corpus first (journal indices below zero), then the sweep.
    std::vector<Case> sweep = corpus_cases(opt_.corpus_dir / spec_.name);
    const int64_t corpus_size = int64_t(sweep.size());
    // Index cases: cuda, where they fit the device's budget and the host memory left.
    const SweepTarget target{backend_.kind(), double(backend_.memory_budget()), host_.for_cases()};
    for (Case& c : op_.sweep(spec_, opt_.seed, target)) sweep.push_back(std::move(c));
    heavy_cases_last(op_, sweep, size_t(corpus_size));
    const int64_t sweep_size = int64_t(sweep.size()) - corpus_size;
    const int64_t max_cases = opt_.max_cases.value_or(sweep_size + kDefaultRandomCases) + corpus_size;
    const std::map<int64_t, FinishedCase>* done = nullptr;
    if (opt_.resume) {
      auto it = opt_.resume->finished.find(spec_key_);
      if (it != opt_.resume->finished.end()) done = &it->second;
    }
    for (int64_t slot = 0; slot < max_cases && !stop_; ++slot) {
      const int64_t i = slot - corpus_size;  // negative: a corpus case
      if (elapsed() > opt_.budget_seconds || int(report_.failures.size()) >= opt_.max_failures) break;
      if (done && done->count(i)) {  // finished before the interruption: take its result as it was
        const FinishedCase& f = done->at(i);
        ++report_.cases_run;
        if (f.verdict == Verdict::pass) ++report_.cases_passed;
        else report_.failures.push_back({f.c, CaseOutcome{f.verdict, f.call, f.detail}, f.case_file,
                                         "assay repro " + f.case_file.string()});
        continue;
      }
      std::optional<Case> c = slot < int64_t(sweep.size()) ? std::optional<Case>(sweep[slot])
                                                           : op_.random_case(spec_, opt_.seed, uint64_t(i), gen);
      if (!c) {
        ++report_.cases_skipped, ++report_.skip_reasons["no case satisfies the spec's requires"];
        continue;
      }
      if (op_.work(*c) > limits.max_work || op_.case_bytes(*c) > limits.max_bytes) {
        ++report_.cases_skipped;
        ++report_.skip_reasons[fmt::format("larger than the {} backend takes ({})", name(backend_.kind()), c->origin)];
        continue;
      }
      if (!host_.fits(op_.host_bytes(*c, backend_.kind()))) {
        ++report_.cases_skipped;
        ++report_.skip_reasons[fmt::format("more host memory than --host-memory-limit {} leaves ({})",
                                           gib(host_.limit), c->origin)];
        continue;
      }
      if (!(batch_ > 0 && op_.plannable(*c))) {
        run_waiting();  // what waits runs first: cases finish in order
        if (stop_) break;
        if (opt_.journal) opt_.journal->case_started(spec_key_, i, *c);
        case_started_ = elapsed();
        run_alone(i, *c);
        continue;
      }
      waiting_index_.push_back(i), waiting_.push_back(std::move(*c));
      if (waiting_.size() >= batch_) run_waiting();
    }
    run_waiting();
    runner_.reset();  // the worker lets go of the case buffers before anything else runs
    if (!opt_.sanitize.empty()) replay_under_sanitizer(spec_, opt_, small_passes_, report_);
  }

  void run_alone(int64_t i, const Case& c) {
    try {
      CaseOutcome outcome;
      try {
        outcome = attempt(c, false);
      } catch (const OutOfMemory& e) {
        // The memory did not come within the budget: the machine's fault, on
        // record with its figures; the journal leaves the case unfinished, so
        // --resume runs it again.
        report_.infrastructure.push_back({i, c, e.what()});
        return;
      }
      record(i, c, outcome);
    } catch (const DeadlineReached& e) {
      stopped_at_budget(i, c, e.what());
    }
  }
  // The case running when the budget ran out: saved and reported as
  // unfinished (its journal line stays "started": --resume runs it again).
  void stopped_at_budget(int64_t i, const Case& c, const std::string& why) {
    stop_ = true;
    UnfinishedCase u{c, {}, elapsed() - case_started_, why};
    const std::string note = fmt::format("{} after {:.1f} s of it (--budget {:g} s)", why, u.seconds, opt_.budget_seconds);
    try {
      u.case_file = save_unfinished_case(case_dir_, spec_, c, i, "", note);
    } catch (const InfraError& e) {
      std::fprintf(stderr, "assay: %s: the unfinished case was not saved: %s\n", spec_.name.c_str(), e.what());
    }
    report_.unfinished = std::move(u);
  }
  // The planned cases that wait, in one exchange with the worker.
  void run_waiting() {
    if (waiting_.empty()) return;
    if (opt_.journal)
      for (size_t j = 0; j < waiting_.size(); ++j) opt_.journal->case_started(spec_key_, waiting_index_[j], waiting_[j]);
    std::vector<CaseOutcome> outcomes;
    std::optional<size_t> stopped;  // the case the budget's end stopped
    std::string why;
    case_started_ = elapsed();
    try {
      outcomes = run_cases(op_, backend_, *runner_, waiting_, exec_);
    } catch (const OutOfMemory&) {
      // Their copies did not fit: each case alone, with none.
      for (size_t j = 0; j < waiting_.size() && !stop_; ++j) {
        case_started_ = elapsed();
        run_alone(waiting_index_[j], waiting_[j]);
      }
    } catch (const CasesStopped& e) {
      outcomes = e.finished, stopped = e.finished.size(), why = e.what();  // the finished ones are not lost
    }
    for (size_t j = 0; j < outcomes.size(); ++j) record(waiting_index_[j], waiting_[j], outcomes[j]);
    if (stopped) stopped_at_budget(waiting_index_[*stopped], waiting_[*stopped], why);
    waiting_index_.clear(), waiting_.clear();
  }
  void record(int64_t i, const Case& c, const CaseOutcome& outcome) {
    if (int(report_.failures.size()) >= opt_.max_failures) {
      // Ran in an exchange past the kernel's last reported failure: on record
      // in the journal, left out of the report as a run one case at a time
      // (or a resumed one) would have left it.
      if (opt_.journal) opt_.journal->case_finished(spec_key_, i, outcome, {});
      return;
    }
    ++report_.cases_run;
    fs::path file;
    if (outcome.verdict != Verdict::pass) file = save_case(case_dir_, spec_, c, outcome, i);
    if (opt_.journal) opt_.journal->case_finished(spec_key_, i, outcome, file);
    if (outcome.verdict == Verdict::pass) {
      ++report_.cases_passed;
      report_.worst_pass_ratio = std::max(report_.worst_pass_ratio, outcome.stats.max_ratio);
      if (!opt_.sanitize.empty() && op_.work(c) <= kSanitizeSampleWork) small_passes_.push_back({i, c, outcome});
    } else {
      report_.failures.push_back({c, outcome, file, "assay repro " + file.string()});
      const int attempts = shrink_attempts_for(outcome.verdict, isolate_, opt_.shrink_attempts);
      if (report_.failures.size() == 1 && attempts > 0) {
        CaseProbe probe = [&](const Case& x) { return attempt(x, batch_ > 0); };
        // Huge cases cost seconds each: at most half the kernel's budget, and
        // never past its end (an attempt running then is stopped).
        shrink_first_failure(spec_, probe, attempts,
                             std::min(std::max(10.0, opt_.budget_seconds / 2), deadline_.left()), case_dir_, i,
                             report_.failures.front());
      }
      if (!isolate_ && outcome.verdict == Verdict::cuda_error) stop_ = true;
    }
    reporter_.case_done(report_, c, outcome);
  }

  const Spec& spec_;
  const Op& op_;
  Backend& backend_;
  const GateOptions& opt_;
  Reporter& reporter_;
  KernelReport report_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  const bool isolate_;
  const fs::path case_dir_;
  const std::string spec_key_;  // the journal's name for the kernel
  size_t batch_ = 0;
  ExecOptions exec_;
  Deadline deadline_;        // start + --budget
  HostMemoryCap host_;       // --host-memory-limit, less what set-up took
  double case_started_ = 0;  // when the case (or exchange) now running began
  LoadedKernel kernel_;
  std::unique_ptr<Runner> runner_;
  MemoryWaits waits_;                     // for device memory other processes held
  std::vector<SampleCase> small_passes_;  // candidates for sanitizer replays
  bool stop_ = false;                     // in process, a CUDA error may have poisoned the harness's context
  std::vector<int64_t> waiting_index_;    // journal indices of waiting_
  std::vector<Case> waiting_;             // small cases to be planned together
};

}  // namespace

void heavy_cases_last(const Op& op, std::vector<Case>& cases, size_t from) {
  std::vector<std::pair<double, Case>> heavy;
  size_t light = from;
  for (size_t i = from; i < cases.size(); ++i) {
    const double bytes = op.case_bytes(cases[i]);
    if (bytes > kHeavyCaseBytes) heavy.emplace_back(bytes, std::move(cases[i]));
    else if (light++ != i) cases[light - 1] = std::move(cases[i]);  // never onto itself
  }
  std::stable_sort(heavy.begin(), heavy.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [bytes, c] : heavy) cases[light++] = std::move(c);
}

KernelReport run_gate(const Spec& spec, Backend& backend, const GateOptions& opt, Reporter& reporter) {
  return KernelGate(spec, backend, opt, reporter).run();
}

}  // namespace assay
