#include "bench/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>

#include <fmt/format.h>

#include "bench/bench_shapes.h"
#include "case/rng.h"
#include "core/error.h"
#include "exec/call_frame.h"
#include "exec/executor.h"
#include "exec/guarded_tensor.h"
#include "exec/patterns.h"
#include "exec/worker_protocol.h"
#include "exec/worker_runner.h"
#include "gate/gate.h"
#include "judge/compare.h"
#include "ops/op.h"

namespace assay::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A batch that disagrees with the harness's clock is dropped; this many,
// once they are also a quarter of the side's batches in this mode, make the
// side's verdict timing_escape. A cheat disagrees every time, a loaded
// machine now and then.
constexpr int kEscapesToFail = 3;
static_assert(kMaxInputSets + kFirstSightSets <= wire::kMaxSets, "a first-sight batch holds every set");
constexpr int kEscapeShare = 4;  // at least one in this many batches

// The tensors of one benched case: the live buffers every call is handed,
// and each input set's images (inputs drawn, outputs poisoned or holding the
// initial value the kernel reads), copied into the live ones before a call.
class ShapeData {
 public:
  // sets: rotating over the timed calls; probes: fresh ones for the first-sight probe (after them).
  ShapeData(const Op& op, Backend& be, const Case& c, int sets, int probes)
      : op_(op), be_(be), c_(c), n_(c.tensors.size()), rotating_(sets) {
    for (size_t i = 0; i < n_; ++i) live_.push_back(std::make_unique<GuardedTensor>(be, c.geom(int(i))));
    sets_.resize(size_t(sets + probes));
    for (int k = 0; k < sets + probes; ++k)
      for (size_t i = 0; i < n_; ++i) {
        sets_[size_t(k)].push_back(std::make_unique<GuardedTensor>(be, c.geom(int(i))));
        draw(k, i);
      }
    std::vector<std::byte*> data(n_);
    for (size_t i = 0; i < n_; ++i) data[i] = live_[i]->data();
    frame_ = std::make_unique<CallFrame>(be, c, data);
    // A capture slot holds each output buffer whole, as the worker sees it:
    // the backend's owner of the buffer (on cuda its block's size class,
    // larger than what was asked), the bytes the worker copies and checks.
    for (size_t i = 0; i < n_; ++i)
      if (!is_input(i)) {
        std::optional<Buffer> owner = be.owner_of(live_[i]->data());
        if (!owner) throw InfraError("a benched tensor is not in a shareable buffer");
        output_at_.push_back({i, stride_}), stride_ += owner->bytes;
      }
    be.synchronize();
  }

  const Case& c() const { return c_; }
  int sets() const { return rotating_; }  // the rotating sets: 0 .. sets() - 1
  int probes() const { return int(sets_.size()) - rotating_; }  // probe j is set sets() + j
  // Draws the probe sets again from new seeds: fresh to every kernel.
  void redraw_probes() {
    ++probe_draws_;
    for (int k = rotating_; k < int(sets_.size()); ++k)
      for (size_t i = 0; i < n_; ++i) draw(k, i);
    be_.synchronize();
  }
  const assay_call& call() const { return frame_->call; }
  size_t stride() const { return stride_; }  // one call's captured outputs
  uint64_t seed_of(int k) const {
    if (k == 0) return c_.seed;
    const uint64_t draw = k < rotating_ ? 0 : uint64_t(probe_draws_) << 32;
    return mix64(c_.seed ^ (0xbe9c5e70ull + uint64_t(k) + draw));
  }
  std::vector<BufferCopy> copies(int k) const {
    std::vector<BufferCopy> v;
    for (size_t i = 0; i < n_; ++i) v.push_back({live_[i]->buffer(), sets_[size_t(k)][i]->buffer()});
    return v;
  }
  // Where each tensor's data is for the reference of set k (inputs, initial values).
  std::vector<const std::byte*> reference_inputs(int k) const {
    std::vector<const std::byte*> d(n_, nullptr);
    for (size_t i = 0; i < n_; ++i)
      if (is_input(i) || op_.reads_initial(c_, int(i))) d[i] = sets_[size_t(k)][i]->data();
    return d;
  }

  // Judges one call's captured outputs (`capture`: stride() bytes of the
  // backend's memory) as made from set k, where they live, by `op`: the
  // side's own (its spec's claims, e.g. moe_topk's `sorted`).
  CompareStats judge(const Op& op, int k, Buffer capture, const Spec& spec, double scale, std::string& damage) const {
    std::vector<const std::byte*> out(n_, nullptr);
    for (auto [i, at] : output_at_) {
      const Buffer got{capture.data + at, live_[i]->buffer().bytes, -1, capture.id};
      if (auto bad = live_[i]->first_damage(got); bad && damage.empty())
        damage = fmt::format("{} byte {} outside its elements was overwritten", c_.tensors[i].name,
                             int64_t(*bad) - int64_t(live_[i]->guard()));
      out[i] = got.data + live_[i]->guard();
    }
    std::vector<RecipeParams> drawn(n_);
    for (size_t i = 0; i < n_; ++i) drawn[i] = op.params_for(c_, int(i));
    const std::vector<const std::byte*> device = reference_inputs(k);
    JudgeInput in{c_, device, out, drawn, seed_of(k), spec.compute, scale, spec.subnormals, deadline_};
    in.aggregate_precision = true;  // a kernel fast because it silently computes narrower fails here
    return op.judge(be_, in);
  }

 private:
  bool is_input(size_t i) const { return c_.tensors[i].role == Role::input; }
  void draw(int k, size_t i) {
    GuardedTensor& t = *sets_[size_t(k)][i];
    t.paint_canary_around();
    TensorGeom g = t.geom();
    g.offset += int64_t(t.guard() / dtype_bytes(g.dtype));  // the fills address whole buffers
    if (is_input(i) || op_.reads_initial(c_, int(i)))
      be_.fill_tensor(t.buffer(), g, op_.params_for(c_, int(i)), seed_of(k), uint32_t(i));
    else
      be_.fill_constant(t.buffer(), g, poison_bits(c_.tensors[i].dtype));
  }

  const Op& op_;
  Backend& be_;
  const Case& c_;
  size_t n_;
  int rotating_;         // sets_[0, rotating_) rotate; the rest are the probe sets
  int probe_draws_ = 0;  // how often the probe sets were drawn again
  std::vector<std::unique_ptr<GuardedTensor>> live_;
  std::vector<std::vector<std::unique_ptr<GuardedTensor>>> sets_;
  std::unique_ptr<CallFrame> frame_;
  std::vector<std::pair<size_t, size_t>> output_at_;  // output tensor, its place in a capture
  size_t stride_ = 0;
  Deadline deadline_{};
};

// Calls per batch for a call of `per_call` seconds.
int calls_for(double batch_seconds, double per_call, int capacity) {
  const double n = per_call > 0 ? batch_seconds / per_call : 1;
  return int(std::clamp(n, 1.0, double(std::max(1, capacity))));
}

// A buffer view inside a larger allocation.
Buffer slice(Buffer b, size_t at, size_t bytes) { return Buffer{b.data + at, bytes, -1, b.id}; }

// Something timed on a shape: a kernel in its worker, or the op's reference.
class Subject {
 public:
  virtual ~Subject() = default;
  // The gate at this shape and each input set's first judged call; false
  // (side's verdict set) when it fails.
  virtual bool prepare(ShapeData& d, BenchSide& side) = 0;
  // One batch of about `n` calls; appends their seconds to `samples`. false
  // (side's verdict set) when it failed.
  virtual bool batch(ShapeData& d, bool cold, int n, BenchSide& side, std::vector<double>& samples) = 0;
  virtual int capacity() const = 0;  // most calls one batch can capture
  // One cold call on each probe set, all fresh to the kernel, each output
  // judged; their seconds go to side.first_sight. false (verdict set) on a
  // failure. Only kernels: the harness's own reference caches nothing.
  virtual bool first_sight(ShapeData&, BenchSide&) { return true; }
  virtual void release() {}
};

std::string_view end_verdict(RunEnd e) {
  switch (e) {
    case RunEnd::crashed: return "crash";
    case RunEnd::timed_out: return "hang";
    case RunEnd::device_error: return "cuda_error";
    case RunEnd::unordered_output: return "unordered_output";
    case RunEnd::returned: break;
  }
  return "pass";
}

class KernelSubject final : public Subject {
 public:
  KernelSubject(const Op& op, const Spec& spec, Backend& be, const BenchOptions& opt, size_t flush_bytes, SmClock* clock)
      : op_(op), spec_(spec), be_(be), opt_(opt), flush_bytes_(flush_bytes), clock_(clock) {
    LoaderOptions lo = opt.loader;
    lo.open = false;
    kernel_ = load_kernel(spec, lo);
    std::unique_ptr<Runner> r = make_runner(spec, be, kernel_, true, opt.out_dir / spec.name);
    runner_.reset(static_cast<WorkerRunner*>(r.release()));  // isolate: make_runner gives a worker
    scale_ = opt.tolerance_scale.value_or(op.default_scale());
  }
  ~KernelSubject() override { release(); }

  int capacity() const override { return capacity_; }

  bool prepare(ShapeData& d, BenchSide& side) override {
    release();
    ExecOptions exec{spec_.compute, scale_, spec_.deterministic, false, 0};
    exec.subnormals = spec_.subnormals;
    CaseOutcome gate = run_case(op_, be_, *runner_, d.c(), exec);
    if (gate.verdict != Verdict::pass)
      return fail(side, std::string(name(gate.verdict)), "the gate at this shape: " + gate.detail);
    const double budget = opt_.capture_bytes > 0 ? opt_.capture_bytes
                          : be_.kind() == BackendKind::cuda ? double(int64_t(4) << 30) : double(512 << 20);
    capacity_ = int(std::clamp(budget / double(std::max<size_t>(1, d.stride())), 1.0, double(wire::kMaxTimed)));
    capture_ = be_.allocate(size_t(capacity_) * d.stride());
    for (int k = 0; k < d.sets(); ++k) {
      BatchTimes t = runner_->time_batch(batch_of(d, 1, false, k));
      if (!status_ok(t, 1, side)) return false;
      std::string damage;
      CompareStats s = d.judge(op_, k, slice(capture_, 0, d.stride()), spec_, scale_, damage);
      if (!damage.empty()) return fail(side, "out_of_bounds_write", damage);
      if (Verdict v = verdict_of(s); v != Verdict::pass)
        return fail(side, std::string(name(v)), fmt::format("input set {}: {}", k, describe_bad(s, d.c())));
      judged_.push_back(be_.allocate(d.stride()));
      be_.copy(judged_.back(), slice(capture_, 0, d.stride()));
    }
    return true;
  }

  // The cost of the harness's own steps for batches like this one, with no
  // call, and the calls per batch that make a batch last about
  // batch_seconds with them (a cold call costs its flush). Batches of 1 and
  // of n steps on the harness's clock give the cost per exchange and per
  // step. Where the step is too small for that clock's noise, the worker's
  // span of the n steps tells it, but never more than the harness's clock
  // allows (wall / n): a forged timer cannot widen what the cross-check
  // accepts. The least of three, not a hiccup's.
  StepCost step_cost(ShapeData& d, bool cold, double per_call, int& n) {
    auto least = [&](int calls, double* span) {
      double wall = 1e9;
      for (int rep = 0; rep < 3; ++rep) {
        TimedBatch b = batch_of(d, std::min(calls, capacity_), cold, 0);
        b.no_call = true;
        BatchTimes t = runner_->time_batch(b);
        if (t.status.end != RunEnd::returned || t.status.code != 0)
          throw InfraError("the worker failed a batch without calls: " + t.status.failure);
        wall = std::min(wall, t.wall_s);
        if (span) *span = std::min(*span, t.span_s);
      }
      return wall;
    };
    double span_n = 1e9;
    const double one = least(1, nullptr);
    n = std::clamp(calls_for(opt_.batch_seconds, per_call + one, capacity_), std::min(2, capacity_), capacity_);
    const int steps = std::max(2, std::min(n, capacity_));
    const double many = steps > 1 && capacity_ > 1 ? least(steps, &span_n) : one;
    StepCost c;
    if (capacity_ > 1) {
      c.step_s = std::max(0.0, (many - one) / (steps - 1));
      c.step_s = std::max(c.step_s, std::clamp(span_n / steps, 0.0, many / steps));
    } else {
      c.step_s = one;  // one call a batch: the exchange and the step are not told apart
    }
    c.fixed_s = std::max(0.0, one - c.step_s);
    return c;
  }
  // After the warm-up: its dropped batches (buffers mapped the first time) do not count.
  void set_step_cost(bool cold, StepCost c) { (cold ? cold_cost_ : hot_cost_) = c, escapes_ = batches_ = 0, warming_ = false; }

  bool batch(ShapeData& d, bool cold, int n, BenchSide& side, std::vector<double>& samples) override {
    n = std::clamp(n, 1, capacity_);
    ++batches_;
    BatchTimes t = runner_->time_batch(batch_of(d, n, cold, 0));
    if (debug_)
      std::fprintf(stderr, "bench %s %s n=%d wall %.6f span %.6f\n", spec_.name.c_str(), cold ? "cold" : "hot", n, t.wall_s, t.span_s);
    if (!status_ok(t, n, side)) return false;
    // The worker's timestamps against the harness's clock.
    const StepCost& cost = cold ? cold_cost_ : hot_cost_;
    // Warming up, the steps' cost is not measured yet: outputs are checked, times not.
    if (std::string why = warming_ ? "" : cross_check(t.call_s, t.span_s, t.wall_s, cost); !why.empty()) {
      // Explained by the worker or the harness waiting for a CPU: the
      // machine's, not the kernel's. Dropped, never a sample (so a kernel
      // that makes itself wait gains nothing), and not an escape.
      if (cross_check(t.call_s, t.span_s, t.wall_s, cost, t.wait_s).empty()) {
        side.discarded += n;
        return true;
      }
      why += fmt::format(" ({} run, {} calls; no-call steps {:.3g} s a call, {:.3g} s an exchange)", cold ? "cold" : "hot", n,
                         cost.step_s, cost.fixed_s);
      if (++escapes_ >= kEscapesToFail && escapes_ * kEscapeShare >= batches_)
        return fail(side, std::string(kTimingEscape), why);
      ++side.discarded;
      return true;
    }
    // Every timed call's output: the set's judged bits, or judged again.
    for (int i = 0; i < n; ++i) {
      const int k = i % d.sets();
      const Buffer got = slice(capture_, size_t(i) * d.stride(), d.stride());
      if (!be_.first_difference(got, judged_[size_t(k)])) continue;
      std::string damage;
      CompareStats s = d.judge(op_, k, got, spec_, scale_, damage);
      if (!damage.empty()) return fail(side, "out_of_bounds_write", fmt::format("timed call {} of a batch: {}", i + 1, damage));
      if (Verdict v = verdict_of(s); v != Verdict::pass)
        return fail(side, std::string(name(v)),
                    fmt::format("timed call {} of a batch of {} (input set {}): {}", i + 1, n, k, describe_bad(s, d.c())));
    }
    if (clock_)
      if (std::optional<ClockReading> r = clock_->read()) {
        side.clock_mhz = r->sm_mhz;
        if (r->throttled) {  // the GPU's speed, not the kernel's
          side.discarded += n;
          return true;
        }
      }
    samples.insert(samples.end(), t.call_s.begin(), t.call_s.end());
    return true;
  }

  // One batch over the rotating sets and then the probe sets, twice round:
  // calls K .. K+P-1 meet inputs the kernel has never seen, after K calls
  // that put the batch in its steady state (a short batch's first calls are
  // slower on a loaded machine). Every call on a probe set is judged in full,
  // the others against their set's judged output. A batch the cross-check
  // rejects is taken again on probe sets drawn anew; after the third,
  // timing_escape if any rejection was not explained by waiting for a CPU,
  // else not_timed.
  bool first_sight(ShapeData& d, BenchSide& side) override {
    const int k = d.sets(), all = d.sets() + d.probes();
    const int n = std::min(2 * all, capacity_);
    if (d.probes() < 1 || n <= k) return true;  // no room for a call on a fresh set
    bool escaped = false;
    for (int attempt = 1;; ++attempt) {
      TimedBatch b = batch_of(d, n, true, 0);
      b.sets.clear();
      for (int j = 0; j < all; ++j) b.sets.push_back(d.copies(j));
      BatchTimes t = runner_->time_batch(b);
      if (!status_ok(t, n, side)) return false;
      if (std::string why = cross_check(t.call_s, t.span_s, t.wall_s, cold_cost_); !why.empty()) {
        escaped |= !cross_check(t.call_s, t.span_s, t.wall_s, cold_cost_, t.wait_s).empty();
        if (attempt >= kEscapesToFail && escaped)
          return fail(side, std::string(kTimingEscape), why + " (the first-sight probe's batch)");
        if (attempt >= kEscapesToFail)
          return fail(side, "not_timed", "the first-sight probe's batches were each slowed by waiting for a CPU (a "
                                         "loaded machine): no first calls measured");
        d.redraw_probes();
        continue;
      }
      for (int i = 0; i < n; ++i) {
        const int set = i % all;
        const Buffer got = slice(capture_, size_t(i) * d.stride(), d.stride());
        if (set < k && !be_.first_difference(got, judged_[size_t(set)])) continue;
        std::string damage;
        CompareStats s = d.judge(op_, set, got, spec_, scale_, damage);
        if (!damage.empty()) return fail(side, "out_of_bounds_write", "the first-sight probe's batch: " + damage);
        if (Verdict v = verdict_of(s); v != Verdict::pass)
          return fail(side, std::string(name(v)), fmt::format("call {} of the first-sight probe's batch (input set {}{}): {}",
                                                              i + 1, set, set >= k ? ", fresh" : "", describe_bad(s, d.c())));
      }
      side.first_sight.assign(t.call_s.begin() + k, t.call_s.begin() + std::min(n, all));
      // The batch's calls on inputs already seen (the rotating sets, then
      // every set's second call): the machine's pace at that moment.
      std::vector<double> seen(t.call_s.begin(), t.call_s.begin() + k);
      seen.insert(seen.end(), t.call_s.begin() + std::min(n, all), t.call_s.begin() + n);
      side.first_sight_repeat = seen.empty() ? 0 : summarize(seen).median;
      return true;
    }
  }

  void release() override {
    for (Buffer& b : judged_) be_.release(b);
    judged_.clear();
    if (capture_.data) be_.release(capture_);
    capture_ = {};
    escapes_ = batches_ = 0, warming_ = true;
  }

 private:
  TimedBatch batch_of(ShapeData& d, int n, bool cold, int first_set) {
    TimedBatch b;
    b.call = &d.call(), b.calls = n;
    for (int k = 0; k < d.sets(); ++k) b.sets.push_back(d.copies((first_set + k) % d.sets()));
    if (cold) b.flush_bytes = flush_bytes_;  // the worker flushes with its own memory
    b.capture = capture_, b.capture_stride = d.stride();
    b.timeout_s = 10 + n * std::max(1.0, op_.default_timeout(d.c(), be_.kind()));
    return b;
  }
  bool status_ok(const BatchTimes& t, int n, BenchSide& side) {
    if (t.status.end != RunEnd::returned) return fail(side, std::string(end_verdict(t.status.end)), t.status.failure);
    if (!t.status.failure.empty()) return fail(side, "kernel_error", t.status.failure);
    if (t.status.code == ASSAY_UNSUPPORTED) return fail(side, "rejected", "returned ASSAY_UNSUPPORTED at a benched shape");
    if (t.status.code != ASSAY_OK) return fail(side, "kernel_error", fmt::format("assay_run returned {}", t.status.code));
    if (t.call_s.size() != size_t(n)) return fail(side, "kernel_error", "the worker made fewer calls than asked");
    return true;
  }
  static bool fail(BenchSide& side, std::string verdict, std::string detail) {
    side.verdict = std::move(verdict), side.detail = std::move(detail);
    return false;
  }

  const Op& op_;
  const Spec& spec_;
  Backend& be_;
  const BenchOptions& opt_;
  size_t flush_bytes_;
  SmClock* clock_;
  LoadedKernel kernel_;
  std::unique_ptr<WorkerRunner> runner_;
  double scale_ = 2;
  Buffer capture_;
  int capacity_ = 1;
  std::vector<Buffer> judged_;  // per input set: the outputs as judged
  StepCost cold_cost_, hot_cost_;
  int escapes_ = 0, batches_ = 0;  // in this mode
  bool warming_ = true;  // until the steps' cost is measured (set_step_cost)
  const bool debug_ = std::getenv("ASSAY_BENCH_DEBUG") != nullptr;  // each batch's figures to stderr
};

// The op's own FP64 reference as the baseline (--baseline reference): timed
// in the harness's process, wall clock around each call and a synchronize.
class ReferenceSubject final : public Subject {
 public:
  ReferenceSubject(const Op& op, Backend& be, Buffer flush, double batch_seconds)
      : op_(op), be_(be), flush_(flush), batch_seconds_(batch_seconds) {}
  bool prepare(ShapeData&, BenchSide&) override { return true; }
  int capacity() const override { return 64; }
  // A batch lasts about as long as a kernel's, whatever a cold call's flush costs here.
  bool batch(ShapeData& d, bool cold, int n, BenchSide&, std::vector<double>& samples) override {
    const auto start = Clock::now();
    for (int i = 0; i < n && (i == 0 || seconds_since(start) < batch_seconds_); ++i) {
      if (cold && flush_.data) be_.fill_pattern(flush_, uint64_t(i), 1);
      be_.synchronize();
      const auto t0 = Clock::now();
      op_.reference(be_, d.c(), d.reference_inputs(i % d.sets()));
      be_.synchronize();
      samples.push_back(seconds_since(t0));
    }
    return true;
  }

 private:
  const Op& op_;
  Backend& be_;
  Buffer flush_;
  double batch_seconds_;
};


}  // namespace

std::string cross_check(std::span<const double> call_s, double span_s, double wall_s, const StepCost& cost,
                        double wait_s) {
  const double sum = std::accumulate(call_s.begin(), call_s.end(), 0.0);
  const double n = double(call_s.size());
  for (double s : call_s)
    if (!std::isfinite(s) || s < 0) return "the worker's timestamps give a negative or undefined call time";
  if (span_s > wall_s * 1.01 + 1e-4)
    return fmt::format("the worker timed {:.6g} s for a batch the harness saw take {:.6g} s", span_s, wall_s);
  if (sum > span_s * 1.001 + 1e-6)
    return fmt::format("the calls' times add up to {:.6g} s, more than their span of {:.6g} s", sum, span_s);
  const double wall_allowed = std::max(2e-3, 0.1 * wall_s) + 2 * cost.fixed_s;
  if (wall_s - span_s - std::max(0.0, wait_s) > wall_allowed)
    return fmt::format("the harness's clock saw {:.6g} s around a batch the worker timed at {:.6g} s (at most {:.3g} s "
                       "of exchange allowed, {:.3g} s of waiting for a CPU excused): work ran outside the timed calls "
                       "(another stream or thread), or the timer was forged",
                       wall_s, span_s, wall_allowed, std::max(0.0, wait_s));
  const double gap_allowed = std::max(1e-3, 0.1 * span_s) + 2 * n * cost.step_s;
  if (span_s - sum - std::max(0.0, wait_s) > gap_allowed)
    return fmt::format("the calls' times cover {:.6g} s of their {:.6g} s span, beyond the harness's own steps "
                       "between them (at most {:.3g} s): the per-call times were forged",
                       sum, span_s, gap_allowed);
  return {};
}

int BenchReport::exit_code() const {
  if (!setup_error.empty()) return setup_exit;
  for (const ShapeResult& s : shapes)
    if (s.verdict != kFaster && s.verdict != kSlower && s.verdict != kSame) return exit_kernel_failed;
  if (require_speedup && !claim_holds.value_or(false)) return exit_kernel_failed;
  return exit_pass;
}

BenchReport run_bench(const Spec& candidate, const Spec* baseline, Backend& backend, const BenchOptions& opt) {
  const Op& op = op_of(candidate);
  if (baseline && op_of(*baseline).name() != op.name())
    throw InputError(fmt::format("the baseline {} is op {}, the candidate {} op {}: a baseline times the same op",
                                 baseline->file.string(), op_of(*baseline).name(), candidate.file.string(), op.name()));
  if (baseline && baseline->backend != candidate.backend)
    throw InputError("the candidate and the baseline must run on the same backend");
  if (opt.input_sets < 2 || opt.input_sets > kMaxInputSets)
    throw InputError(fmt::format("--input-sets must be 2 to {}", kMaxInputSets));
  std::vector<BenchShape> shapes = !opt.shapes.empty()           ? opt.shapes
                                  : !candidate.bench.empty()      ? candidate.bench
                                  : backend.kind() == BackendKind::host ? host_shapes(op.bench_shapes())
                                                                  : op.bench_shapes();
  if (shapes.empty())
    throw InputError(fmt::format("op {} has no default bench shapes: give them in the spec (bench:) or with --shapes",
                                 op.name()));

  BenchReport report;
  report.backend = std::string(name(backend.kind()));
  report.peaks = device_peaks(backend.kind());
  report.candidate = candidate.name, report.candidate_spec = candidate.file.string();
  report.baseline = baseline ? baseline->name : "reference", report.baseline_spec = baseline ? baseline->file.string() : "reference";
  report.require_speedup = opt.require_speedup;
  report.inputs = fmt::format(
      "uniform reals in [-1, 1) (recipe uniform, the op's own value ranges), {} input sets per shape drawn from seed {}, "
      "rotating call by call; outputs poisoned before every call",
      opt.input_sets, opt.seed);
  std::unique_ptr<SmClock> clock;
  if (backend.kind() == BackendKind::cuda) {
    clock = SmClock::open(report.clock_note);
    if (clock) report.clock = clock->read();
  } else {
    report.clock_note = "host: no GPU clock";
  }
  // Cold runs overwrite twice the cache before each call.
  const size_t flush_bytes = size_t(std::max(2.0 * report.peaks.cache_bytes, double(4 << 20)));
  // Only the reference, timed here, flushes with the harness's memory; a worker uses its own.
  Buffer flush = baseline ? Buffer{} : backend.allocate(flush_bytes);

  std::vector<std::unique_ptr<Subject>> subjects;
  try {
    subjects.push_back(std::make_unique<KernelSubject>(op, candidate, backend, opt, flush_bytes, clock.get()));
    // Each side is judged by its own spec's op: the same op, its own claims
    // (a baseline of `sorted: false` may return its experts in any order).
    if (baseline)
      subjects.push_back(std::make_unique<KernelSubject>(op_of(*baseline), *baseline, backend, opt, flush_bytes, clock.get()));
    else subjects.push_back(std::make_unique<ReferenceSubject>(op, backend, flush, opt.batch_seconds));
  } catch (const InputError& e) {
    if (flush.data) backend.release(flush);
    report.setup_error = e.what(), report.setup_exit = exit_bad_input;
    return report;
  }

  std::vector<double> speedups;
  for (const BenchShape& shape : shapes) {
    ShapeResult r;
    r.sizes = shape, r.shape = shape_text(shape);
    const Case c = bench_case(op, candidate, shape, opt.seed);
    if (baseline) {
      try {
        op_of(*baseline).validate(c);
      } catch (const InputError& e) {
        throw InputError(fmt::format("the baseline {} does not take the candidate's case at {} (a baseline times the "
                                     "same op on the same tensors): {}",
                                     baseline->file.string(), shape_text(shape), e.what()));
      }
    }
    r.case_line = describe(c);
    const BenchCost cost = op.bench_cost(c);
    r.flops = cost.flops, r.bytes = cost.bytes;
    BenchSide* sides[2] = {&r.candidate, &r.baseline};
    r.candidate.name = report.candidate, r.candidate.spec = report.candidate_spec;
    r.baseline.name = report.baseline, r.baseline.spec = report.baseline_spec;
    {
      ShapeData data(op, backend, c, opt.input_sets, kFirstSightSets);
      // Cold: data in HBM (or RAM) unless it all fits the cache anyway.
      const double flops_floor = report.peaks.flops_per_s > 0 ? r.flops / report.peaks.flops_per_s : 0;
      const double bytes_floor =
          report.peaks.bytes_per_s > 0 && r.bytes > report.peaks.cache_bytes ? r.bytes / report.peaks.bytes_per_s : 0;
      r.floor_seconds = std::max(flops_floor, bytes_floor);
      bool ok[2];
      for (int s = 0; s < 2; ++s) ok[s] = subjects[size_t(s)]->prepare(data, *sides[s]);
      // Warm-up by time, hot, which also gives each side's calls per batch.
      int calls[2] = {1, 1};
      double per_call[2] = {0, 0};
      for (int s = 0; s < 2; ++s) {
        if (!ok[s]) continue;
        std::vector<double> w;
        const auto t0 = Clock::now();
        int n = 1;
        while (ok[s] && (w.empty() || seconds_since(t0) < opt.warmup_seconds)) {
          w.clear();
          ok[s] = subjects[size_t(s)]->batch(data, false, n, *sides[s], w);
          if (!w.empty()) per_call[s] = summarize(w).median;
          if (!w.empty()) n = calls_for(opt.batch_seconds, per_call[s], subjects[size_t(s)]->capacity());
        }
        calls[s] = n;
        sides[s]->discarded = 0;  // warm-up batches are not samples
      }
      for (bool cold : {true, false}) {
        int n[2] = {calls[0], calls[1]};
        for (int s = 0; s < 2; ++s)
          if (ok[s])
            if (auto* k = dynamic_cast<KernelSubject*>(subjects[size_t(s)].get()))
              k->set_step_cost(cold, k->step_cost(data, cold, per_call[s], n[s]));
        std::vector<double> samples[2];
        StopReason stop[2] = {StopReason::not_yet, StopReason::not_yet};
        double wall[2] = {0, 0};  // each side's time in its batches, harness steps included
        // Candidate and baseline batches alternate, so that a drift of the machine falls on both.
        for (bool more = true; more;) {
          more = false;
          for (int s = 0; s < 2; ++s) {
            if (!ok[s] || stop[s] != StopReason::not_yet) continue;
            const auto t0 = Clock::now();
            ok[s] = subjects[size_t(s)]->batch(data, cold, n[s], *sides[s], samples[s]);
            wall[s] += seconds_since(t0);
            stop[s] = should_stop(opt.rule, samples[s]);
            // The timeout bounds the wall time too (a cold run's flushes, dropped batches).
            if (stop[s] == StopReason::not_yet && wall[s] > opt.rule.timeout_seconds && !samples[s].empty())
              stop[s] = StopReason::timed_out;
            if (stop[s] == StopReason::not_yet && wall[s] > 2 * opt.rule.timeout_seconds) {
              ok[s] = false, sides[s]->verdict = "not_timed";
              sides[s]->detail = fmt::format("no sample kept within {:.3g} s ({} dropped)", wall[s], sides[s]->discarded);
            }
            more |= ok[s] && stop[s] == StopReason::not_yet;
          }
        }
        for (int s = 0; s < 2; ++s) {
          if (!ok[s]) continue;
          (cold ? sides[s]->cold : sides[s]->hot) = summarize(samples[s]);
          (cold ? sides[s]->cold_stop : sides[s]->hot_stop) = stop[s];
        }
      }
      // Faster than the speed of light: not a kernel, a cheat or a harness hole.
      for (int s = 0; s < 2; ++s) {
        if (!ok[s]) continue;
        const BenchSide& x = *sides[s];
        if (r.floor_seconds > 0 && x.cold.median < r.floor_seconds)
          ok[s] = false, sides[s]->verdict = kImpossibleSpeed,
          sides[s]->detail = fmt::format("cold median {:.4g} s is below the floor of {:.4g} s ({:.4g} FLOP at {:.4g} FLOP/s, "
                                         "{:.4g} B at {:.4g} B/s)",
                                         x.cold.median, r.floor_seconds, r.flops, report.peaks.flops_per_s, r.bytes,
                                         report.peaks.bytes_per_s);
        else if (flops_floor > 0 && x.hot.median < flops_floor)
          ok[s] = false, sides[s]->verdict = kImpossibleSpeed,
          sides[s]->detail = fmt::format("hot median {:.4g} s is below the compute floor of {:.4g} s ({:.4g} FLOP at {:.4g} FLOP/s)",
                                         x.hot.median, flops_floor, r.flops, report.peaks.flops_per_s);
      }
      // Repeats faster than first calls: the result was remembered. Both
      // sides probe the same fresh sets (each kernel's process sees them first).
      // A probe that says so is taken again on sets drawn anew: a loaded
      // machine slows one batch now and then, a cache every time.
      // The first calls are measured against repeats of the same batch as
      // well as against the cold median: a small machine runs at two paces
      // now and then (a core shared with the harness, a migration), and a
      // probe batch at the slow one is slow on seen inputs too; a cache is
      // fast on them whatever the pace.
      for (int s = 0; s < 2; ++s) {
        double fastest = 0, repeats = 0;
        for (int probe = 1; ok[s] && probe <= kFirstSightProbes; ++probe) {
          if (probe > 1) data.redraw_probes();
          if (!(ok[s] = subjects[size_t(s)]->first_sight(data, *sides[s])) || sides[s]->first_sight.empty()) break;
          fastest = *std::min_element(sides[s]->first_sight.begin(), sides[s]->first_sight.end());
          repeats = std::max(sides[s]->cold.median, sides[s]->first_sight_repeat);
          if (repeats >= kFirstSightShare * fastest) break;
        }
        if (ok[s] && !sides[s]->first_sight.empty() && repeats < kFirstSightShare * fastest)
          ok[s] = false, sides[s]->verdict = kCachedResult,
          sides[s]->detail = fmt::format("cold median {:.4g} s on the rotating input sets ({:.4g} s on seen inputs in the "
                                         "probe's own batch), but at least {:.4g} s on each of {} fresh ones ({:.3g}x "
                                         "faster on inputs it has seen, in {} probes on sets drawn anew each): a "
                                         "remembered result",
                                         sides[s]->cold.median, sides[s]->first_sight_repeat, fastest,
                                         sides[s]->first_sight.size(), fastest / repeats, kFirstSightProbes);
      }
      for (auto& s : subjects) s->release();
    }
    if (!r.candidate.timed()) {
      r.verdict = r.candidate.verdict, r.detail = r.candidate.name + ": " + r.candidate.detail;
    } else if (!r.baseline.timed()) {
      r.verdict = kBaselineFailed, r.detail = fmt::format("{}: {}: {}", r.baseline.name, r.baseline.verdict, r.baseline.detail);
    } else {
      r.speed = compare(r.candidate.cold, r.baseline.cold);
      r.verdict = name(r.speed->verdict);
      r.detail = fmt::format("speedup {:.3f} [{:.3f}, {:.3f}] (cold medians {:.4g} s and {:.4g} s)", r.speed->speedup,
                             r.speed->low, r.speed->high, r.candidate.cold.median, r.baseline.cold.median);
      speedups.push_back(r.speed->speedup);
    }
    report.shapes.push_back(std::move(r));
  }
  if (flush.data) backend.release(flush);
  if (!speedups.empty()) report.geomean_speedup = geometric_mean(speedups);
  if (opt.require_speedup) {
    const bool all = speedups.size() == report.shapes.size();
    report.claim_holds = all && report.geomean_speedup && *report.geomean_speedup >= *opt.require_speedup;
  }
  return report;
}

}  // namespace assay::bench
