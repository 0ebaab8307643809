#include "exec/executor.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "case/rng.h"
#include "core/error.h"
#include "exec/call_frame.h"
#include "exec/guarded_tensor.h"
#include "exec/patterns.h"

namespace assay {
namespace {

using Image = std::vector<std::byte>;

class CaseRun {
 public:
  // planned: every call is set up front (plan()), its inputs staged where
  // the candidate's process copies them from; otherwise one call at a time.
  // own_process: the runner's (Runner::own_process).
  CaseRun(const Op& op, Backend& be, const Case& c, const ExecOptions& opt, bool planned, bool own_process)
      : op_(op), be_(be), c_(c), opt_(opt), n_(c.tensors.size()), planned_(planned), own_process_(own_process),
        change_(op.sparse_change(c)),
        relabel_(op.relabeling(c)) {
    // A broadcast tensor holds one value for many elements: moved round, its
    // elements would not be the earlier ones moved, so such a case draws afresh.
    for (size_t i = 0; i < relabel_.of.size() && i < n_; ++i) {
      const Rotation& r = relabel_.of[i];
      const TensorGeom g = c.geom(int(i));
      if (r.any() && (r.rows != g.rows() || r.cols != g.cols() || r.by_rows >= std::max<int64_t>(r.rows, 1) ||
                      r.by_cols >= std::max<int64_t>(r.cols, 1)))
        throw InfraError(fmt::format("op {}: a relabelling that does not fit tensor {}", op.name(), c.tensors[i].name));
      if (r.any() && g.broadcasts()) relabel_.of.clear();
    }
    if (!relabel_.any()) relabel_.of.clear();
    const Allocation alloc = opt.exact_alloc ? Allocation::exact : Allocation::guarded;
    t_.resize(n_), init_.resize(n_), snapshots_.resize(n_);
    for (size_t i = 0; i < n_; ++i) {
      t_[i] = std::make_unique<GuardedTensor>(be, c.geom(int(i)), alloc);
      if (op.reads_initial(c, int(i))) init_[i] = std::make_unique<GuardedTensor>(be, c.geom(int(i)), alloc);
    }
    previous_.resize(n_), previous_own_.resize(n_);
    if (planned) {
      for (auto& set : staged_) {
        set.t.resize(n_), set.snapshot.resize(n_);
        for (size_t i = 0; i < n_; ++i) {
          set.t[i] = std::make_unique<GuardedTensor>(be, c.geom(int(i)), alloc);
          set.snapshot[i] = be.allocate(t_[i]->buffer().bytes);
        }
      }
      for (int k = 0; k < calls(); ++k) {
        captures_[k].resize(n_);
        for (size_t i = 0; i < n_; ++i) captures_[k][i] = be.allocate(t_[i]->buffer().bytes);
      }
    }
  }
  ~CaseRun() {
    for (auto& b : snapshots_)
      if (b.data) be_.release(b);
    for (auto& set : staged_)
      for (auto& b : set.snapshot)
        if (b.data) be_.release(b);
    for (auto& call : captures_)
      for (auto& b : call)
        if (b.data) be_.release(b);
    for (auto& b : previous_own_)
      if (b.data) be_.release(b);
  }
  // 1 fresh, 2 fresh inputs, 3 a sparse change of call 2's, 4 call 3 again.
  int calls() const { return calls_per_case(opt_); }
  double timeout() const { return opt_.timeout_s > 0 ? opt_.timeout_s : op_.default_timeout(c_, be_.kind()); }

  // One call at a time: sets up the next call (its inputs drawn, snapshots
  // taken); false once the case is decided. Then judge() how it ended.
  //
  // The inputs are drawn only where they change: the call before left
  // them as it was handed them (its judgement checked every byte against
  // the snapshot), so the same inputs again (call 4: call 3's) stay as they
  // are, a sparse change (call 3) rewrites only the elements it covers, in
  // the buffer and in its snapshot, and a relabelling (call 2) moves the
  // snapshot's values round into the buffer. Outputs are painted afresh.
  bool next_call() {
    if (done_ || call_ == calls()) return false;
    ++call_;
    BatchScope batch(be_);  // the call's paints, draws and snapshots in a few launches
    const InputDelta since = call_ == 1 ? InputDelta{} : change_since(call_ - 1, call_);
    for (size_t i = 0; i < n_; ++i) {
      if (!is_input(i)) {
        paint_output(*t_[i], i, call_);
      } else if (since.kind == InputDelta::Kind::same) {
        continue;
      } else if (since.kind == InputDelta::Kind::sparse) {
        if (int(i) != since.change->tensor) continue;
        const RecipeParams p = params(call_, i);
        be_.fill_patched(t_[i]->buffer(), shifted(i), p, seed_of(call_), uint32_t(i));
        be_.fill_patched(snapshot(i), shifted(i), p, seed_of(call_), uint32_t(i));
        continue;
      } else if (since.kind == InputDelta::Kind::relabeled) {
        if (i >= relabel_.of.size() || !relabel_.of[i].any()) continue;  // not moved: the same values
        be_.copy_rotated(t_[i]->buffer(), snapshot(i), shifted(i), relabel_.of[i]);
      } else {
        draw_input(*t_[i], i, call_);
      }
      be_.copy(snapshot(i), t_[i]->buffer());
    }
    batch.end();
    make_frame();
    return true;
  }
  const assay_call& call() const { return frame_->call; }
  void judge(const RunStatus& status) {
    if (done_) return;
    std::vector<Buffer> handed(n_), left(n_);
    for (size_t i = 0; i < n_; ++i) handed[i] = snapshot(i), left[i] = t_[i]->buffer();
    judge_call(status, handed, left);
  }

  // Planned: every call's step. Call 1's inputs are drawn in place; the
  // later calls take theirs from staged copies, which the candidate's process
  // puts in place right after the call before, having first captured what
  // that call left. So a case's calls follow each other there directly, as
  // one at a time, but with nothing of the harness's in between.
  std::vector<CallStep> plan() {
    draw(t_, 1);
    for (size_t i = 0; i < n_; ++i) be_.copy(snapshot(i), t_[i]->buffer());
    for (int s = 0; s < 2; ++s) {  // call 2's inputs, then call 3's (call 4 repaints the outputs as call 3 found them)
      draw(staged_[s].t, s + 2);
      for (size_t i = 0; i < n_; ++i) be_.copy(staged_[s].snapshot[i], staged_[s].t[i]->buffer());
    }
    make_frame();
    std::vector<CallStep> steps(static_cast<size_t>(calls()));
    for (int k = 0; k < calls(); ++k) {
      steps[k] = CallStep{&frame_->call, timeout(), {}};
      for (size_t i = 0; i < n_; ++i) steps[k].copies.push_back({captures_[k][i], t_[i]->buffer()});
      if (k + 1 == calls()) continue;
      const Staged& next = staged_[k == 0 ? 0 : 1];
      for (size_t i = 0; i < n_; ++i)
        if (k < 2 || !is_input(i)) steps[k].copies.push_back({t_[i]->buffer(), next.t[i]->buffer()});
    }
    return steps;
  }
  // Planned: judges the next call, given how it ended.
  void judge_planned(const RunStatus& status) {
    if (done_ || call_ == calls()) return;
    const int k = call_++;
    std::vector<Buffer> handed(n_), left(n_);
    for (size_t i = 0; i < n_; ++i)
      handed[i] = k == 0 ? snapshot(i) : staged_[k == 1 ? 0 : 1].snapshot[i], left[i] = captures_[k][i];
    judge_call(status, handed, left);
  }

  CaseOutcome& outcome() { return outcome_; }

 private:
  bool is_input(size_t i) const { return c_.tensors[i].role == Role::input; }
  // Calls 2 to 4 draw from one seed: call 1's relabelled where the op has a
  // relabelling (Op::relabeling), another otherwise; call 3 changes a few of
  // those values. (A confirmation run's call 1 draws as call
  // first_call_inputs_of does.)
  int inputs_of(int call) const { return call == 1 ? opt_.first_call_inputs_of : call; }
  uint64_t seed_of(int call) const {
    return inputs_of(call) == 1 || relabel_.any() ? c_.seed : mix64(c_.seed ^ 0x5eed0002ull);
  }
  // How call `later`'s inputs differ from call `earlier`'s: not at all, by
  // the sparse change, relabelled, or wholly (another seed).
  InputDelta change_since(int earlier, int later) const {
    struct Inputs {
      uint64_t seed;
      bool moved, patched;
    };
    auto inputs = [&](int call) {
      const int k = inputs_of(call);
      return Inputs{seed_of(call), k >= 2 && relabel_.any(), k >= 3};
    };
    const Inputs x = inputs(earlier), y = inputs(later);
    InputDelta d;
    if (x.seed != y.seed) return d;
    if (x.moved == y.moved && x.patched == y.patched) d.kind = InputDelta::Kind::same;
    else if (x.moved == y.moved && !x.patched && y.patched) d.kind = InputDelta::Kind::sparse, d.change = &change_;
    else if (!x.moved && y.moved && !x.patched && !y.patched) d.kind = InputDelta::Kind::relabeled, d.relabeling = &relabel_;
    return d;
  }
  RecipeParams params(int call, size_t i) const {
    RecipeParams p = op_.params_for(c_, int(i));
    if (inputs_of(call) >= 2 && i < relabel_.of.size()) p.rotation = relabel_.of[i];
    if (inputs_of(call) >= 3 && int(i) == change_.tensor) p.patch = change_.patch;
    return p;
  }
  void make_frame() {
    std::vector<std::byte*> data(n_);
    for (size_t i = 0; i < n_; ++i) data[i] = t_[i]->data();
    frame_ = std::make_unique<CallFrame>(be_, c_, data);
  }
  // The inputs of `call` into t.
  void draw(std::vector<std::unique_ptr<GuardedTensor>>& t, int call) {
    for (size_t i = 0; i < n_; ++i) {
      if (is_input(i)) draw_input(*t[i], i, call);
      else paint_output(*t[i], i, call);
    }
  }
  void draw_input(GuardedTensor& t, size_t i, int call) {
    t.paint_canary_around();
    be_.fill_tensor(t.buffer(), shifted(i), params(call, i), seed_of(call), uint32_t(i));
  }
  // An output holds its initial value when the kernel reads it, otherwise
  // the poison pattern.
  void paint_output(GuardedTensor& t, size_t i, int call) {
    t.paint_canary_around();
    if (op_.reads_initial(c_, int(i)))
      be_.fill_tensor(t.buffer(), shifted(i), params(call, i), seed_of(call), uint32_t(i));
    else
      be_.fill_constant(t.buffer(), shifted(i), poison_bits(c_.tensors[i].dtype));
  }
  // Geometry relative to the buffer start (the fills address whole buffers).
  TensorGeom shifted(size_t i) const {
    TensorGeom g = t_[i]->geom();
    g.offset += int64_t(t_[i]->guard() / dtype_bytes(g.dtype));
    return g;
  }

  // Call call_ ended with `status`; handed: each buffer as the candidate got
  // it, left: as the call left it.
  void judge_call(const RunStatus& status, const std::vector<Buffer>& handed, const std::vector<Buffer>& left) {
    // A later call that fails is compared with the call before (stale or
    // cached answers); call 4 repeats call 3, whose output passed. The call
    // before's outputs stay where the data lives (a device copy), as does
    // everything judged: the host holds no image of them (dumps aside).
    const std::vector<Buffer>* previous = call_ >= 2 && previous_call_ == call_ - 1 ? &previous_ : nullptr;
    std::vector<std::optional<size_t>> repeat_diff(n_);  // call 4: each output against call 3's
    if (!check_call(call_, status, handed, left, previous, call_ == 4, repeat_diff)) {
      done_ = true;
      return;
    }
    if (call_ == 4 && previous)
      for (size_t i = 0; i < n_; ++i) {
        if (is_input(i)) continue;
        // The guards and gaps hold the canary in both (checked): a difference is an element's.
        if (const std::optional<size_t> at = repeat_diff[i]) {
          done_ = !fail(outcome_, 4, Verdict::nondeterministic,
                        fmt::format("repeat call changed output bytes of {} (first at element byte {})",
                                    c_.tensors[i].name, *at - t_[i]->guard()));
          return;
        }
      }
    if (call_ < calls()) keep_previous(left);
  }

  // This call's outputs, for the next call to look back at: planned, the
  // capture of this call stays; one at a time, the live buffers are
  // repainted next, so a device copy.
  void keep_previous(const std::vector<Buffer>& left) {
    for (size_t i = 0; i < n_; ++i) {
      if (is_input(i)) continue;
      if (planned_) {
        previous_[i] = left[i];
        continue;
      }
      if (!previous_own_[i].data) previous_own_[i] = be_.allocate(t_[i]->buffer().bytes);
      be_.copy(previous_own_[i], left[i]);
      previous_[i] = previous_own_[i];
    }
    previous_call_ = call_;
  }

  // Records the failure; returns false so callers can `return fail(...)`.
  static bool fail(CaseOutcome& out, int call, Verdict v, std::string detail) {
    out.verdict = v, out.call = call, out.detail = std::move(detail);
    return false;
  }

  // The checks of one candidate call; false when it failed (out filled).
  // Everything is judged where the data lives: inputs against their copies
  // as handed, guards against the canary, outputs against the reference
  // (Backend::compare). Only figures and a few elements come to the host,
  // and whole tensors only for a dump (keep_tensors).
  // `previous`: the outputs of the call before (passed), where the data
  // lives; `repeat`: that call had the same inputs, so the same bits pass
  // again without a second reference (repeat_diff: where each output
  // first differs from the call before's).
  bool check_call(int call, const RunStatus& status, const std::vector<Buffer>& handed,
                  const std::vector<Buffer>& left, const std::vector<Buffer>* previous, bool repeat,
                  std::vector<std::optional<size_t>>& repeat_diff) {
    CaseOutcome& out = outcome_;
    if (status.end == RunEnd::crashed) return fail(out, call, Verdict::crash, status.failure);
    if (status.end == RunEnd::timed_out) return fail(out, call, Verdict::hang, status.failure);
    if (status.end == RunEnd::device_error) return fail(out, call, Verdict::cuda_error, status.failure);
    if (status.end == RunEnd::unordered_output) return fail(out, call, Verdict::unordered_output, status.failure);
    // In process the call's errors are the harness device's to report; a
    // worker reported its own, and left nothing on the harness's device.
    if (!own_process_)
      if (std::string device_error = be_.synchronize(); !device_error.empty())
        return fail(out, call, Verdict::cuda_error, device_error);
    if (!status.failure.empty()) return fail(out, call, Verdict::kernel_error, status.failure);
    if (status.code == ASSAY_UNSUPPORTED)
      return fail(out, call, Verdict::rejected, "returned ASSAY_UNSUPPORTED for a case inside the spec");
    if (status.code != ASSAY_OK)
      return fail(out, call, Verdict::kernel_error, fmt::format("assay_run returned {}", status.code));

    const size_t guard = t_[0]->guard();  // the same for every tensor of a case
    // The checks that need no reference, in one round trip: each input with
    // its copy as handed, each output's guards and gaps with the canary, and
    // on a repeat call each output with the call before's.
    std::vector<BufferPair> pairs;
    std::vector<size_t> slot(n_), repeat_slot(n_);
    std::vector<std::vector<GuardedTensor::Probe>> probes(n_);  // outputs: their guards' (and gaps')
    for (size_t i = 0; i < n_; ++i) {
      slot[i] = pairs.size();
      if (is_input(i)) {
        pairs.push_back({handed[i], left[i]});
        continue;
      }
      probes[i] = t_[i]->damage_probes(left[i]);
      for (const GuardedTensor::Probe& p : probes[i]) pairs.push_back(p.pair);
    }
    const bool against_previous = repeat && previous;
    if (against_previous)
      for (size_t i = 0; i < n_; ++i)
        if (!is_input(i)) repeat_slot[i] = pairs.size(), pairs.push_back({(*previous)[i], left[i]});
    // A call judged against its reference (all but a repeat, whose output
    // most often equals the call before's) is judged while the checks
    // above run, so that their answer comes with the judgement's wait for
    // the device. The reference reads the inputs as handed, so a call that
    // fails the checks only has its judgement thrown away.
    be_.queue_differences(pairs.data(), pairs.size());
    std::optional<Judged> judged;
    if (!against_previous) judged = judge_values(call, handed, left);
    const std::vector<std::optional<size_t>> diff = be_.queued_differences();
    // Output i's first damaged byte in its buffer, over its probes.
    auto damaged = [&](size_t i) {
      std::optional<size_t> first;
      for (size_t k = 0; k < probes[i].size(); ++k)
        if (const std::optional<size_t> d = diff[slot[i] + k]; d && (!first || probes[i][k].at + *d < *first))
          first = probes[i][k].at + *d;
      return first;
    };
    // Inputs first (ABI order).
    for (size_t i = 0; i < n_; ++i) {
      if (!is_input(i)) continue;
      const std::optional<size_t> changed = diff[slot[i]];
      if (!changed) continue;
      if (auto why = damage(i, left[i])) return fail(out, call, Verdict::out_of_bounds_write, *why);
      // Handed, the guards and gaps held the canary and still do: the first
      // difference is the first changed element (no second image of the input).
      return fail(out, call, Verdict::input_modified,
                  fmt::format("input {} changed (first at element byte {})", c_.tensors[i].name, *changed - guard));
    }
    for (size_t i = 0; i < n_; ++i)
      if (const std::optional<size_t> at = is_input(i) ? std::nullopt : damaged(i))
        return fail(out, call, Verdict::out_of_bounds_write, damage_text(i, *at));
    if (against_previous) {
      bool same = true;
      for (size_t i = 0; i < n_; ++i)
        if (!is_input(i)) repeat_diff[i] = diff[repeat_slot[i]], same &= !repeat_diff[i];
      if (same) return true;
    }

    if (!judged) judged = judge_values(call, handed, left);
    out.stats = std::move(judged->stats);
    if (opt_.keep_tensors) {
      CaseTensors kept;
      kept.before.resize(n_), kept.after.resize(n_);
      for (size_t i = 0; i < n_; ++i) {
        kept.before[i] = download(is_input(i) ? left[i] : handed[i]);  // inputs: unchanged, as checked above
        if (!is_input(i)) kept.after[i] = download(left[i]);
      }
      kept.ref = std::move(judged->ref), kept.bound = std::move(judged->bound), kept.data_start = guard;
      out.tensors = std::move(kept);
    }
    Verdict v = verdict_of(out.stats);
    if (v == Verdict::pass) return true;
    if (previous) v = classify_repeat(v, out.stats, handed, left, *previous);
    return fail(out, call, v, summary(out.stats));
  }

  // A call's outputs against the op's reference, from the inputs as handed
  // (their copies, which the candidate never saw), with initial values
  // redrawn into scratch memory the kernel never saw.
  struct Judged {
    CompareStats stats;
    std::vector<std::vector<double>> ref, bound;  // keep_tensors only
  };
  Judged judge_values(int call, const std::vector<Buffer>& handed, const std::vector<Buffer>& left) {
    const size_t guard = t_[0]->guard();
    std::vector<const std::byte*> device(n_, nullptr), out_at(n_, nullptr);
    std::vector<RecipeParams> drawn(n_);
    for (size_t i = 0; i < n_; ++i) {
      drawn[i] = params(call, i);
      if (is_input(i)) device[i] = handed[i].data + guard;
      if (init_[i]) {
        init_[i]->paint_canary_around();
        be_.fill_tensor(init_[i]->buffer(), shifted(i), drawn[i], seed_of(call), uint32_t(i));
        device[i] = init_[i]->data();
      }
      if (!is_input(i)) out_at[i] = left[i].data + guard;
    }
    const bool keep = opt_.keep_tensors;  // each judged call's replace the last: the failing call's are what stays
    Judged j;
    JudgeInput in{c_, device, out_at, drawn, seed_of(call), opt_.compute, opt_.tolerance_scale, opt_.subnormals,
                  opt_.deadline, keep ? &j.ref : nullptr, keep ? &j.bound : nullptr};
    in.memo = &memo_;
    if (memo_call_ > 0) in.since_memo = change_since(memo_call_, call);
    if (call < calls() && change_since(call, call + 1).kind == InputDelta::Kind::sparse) in.upcoming = &change_;
    j.stats = op_.judge(be_, in);
    memo_call_ = call;
    return j;
  }

  // A byte outside tensor i's elements (guards, gaps) that no longer holds
  // the canary, in `after` (tensor i as a call left it).
  std::optional<std::string> damage(size_t i, Buffer after) {
    auto at = t_[i]->first_damage(after);
    if (!at) return std::nullopt;
    return damage_text(i, *at);
  }
  std::string damage_text(size_t i, size_t at) const {
    const size_t guard = t_[i]->guard();
    return fmt::format("{} byte {} outside its elements was overwritten ({} guard)", c_.tensors[i].name,
                       int64_t(at) - int64_t(guard), at < guard ? "before" : "after/padding");
  }

  Buffer snapshot(size_t i) {
    if (!snapshots_[i].data) snapshots_[i] = be_.allocate(t_[i]->buffer().bytes);
    return snapshots_[i];
  }
  Image download(Buffer b) {
    Image image(b.bytes);
    be_.download(b, image.data());
    return image;
  }

  // A later call that fails where an earlier one passed: did it leave the
  // outputs as it found them (stale), or write an earlier answer (cached)?
  // Only the first bad elements are read back from what it was handed, what
  // it left and the call before's outputs.
  Verdict classify_repeat(Verdict v, const CompareStats& s, const std::vector<Buffer>& handed,
                          const std::vector<Buffer>& left, const std::vector<Buffer>& previous) {
    if (s.first_bad.empty()) return v;
    int same_as_before = 0, same_as_previous = 0;
    for (auto& e : s.first_bad) {
      const size_t i = size_t(e.tensor);
      if (i >= n_ || !previous[i].data || is_input(i)) return v;
      const TensorGeom& g = t_[i]->geom();
      const int size = dtype_bytes(g.dtype);
      const size_t at = t_[i]->guard() + size_t(g.index(e.row, e.col)) * size;
      std::byte now[16], was[16], kept[16];
      be_.download_range(left[i], at, size_t(size), now);
      be_.download_range(handed[i], at, size_t(size), was);
      be_.download_range(previous[i], at, size_t(size), kept);
      same_as_before += std::equal(now, now + size, was);
      same_as_previous += std::equal(now, now + size, kept);
    }
    const int n = int(s.first_bad.size());
    if (same_as_previous == n) return Verdict::cached_result;
    if (same_as_before == n) return Verdict::stale_result;
    return v;
  }

  std::string summary(const CompareStats& s) const { return describe_bad(s, c_); }

  const Op& op_;
  Backend& be_;
  const Case& c_;
  const ExecOptions& opt_;
  const size_t n_;  // tensors
  const bool planned_;  // every call set up front (plan()), each one's outputs captured
  const bool own_process_;  // the candidate reports its own device errors (a worker)
  std::vector<std::unique_ptr<GuardedTensor>> t_, init_;  // init_: scratch for initial values the kernel reads
  std::vector<Buffer> snapshots_;  // each buffer as it was handed to the candidate (planned: for call 1)
  // planned: the inputs of call 2 and of calls 3 and 4, with snapshots as
  // handed: the candidate's process maps the staged copies to copy them,
  // never the snapshots, which the reference and checks read.
  struct Staged {
    std::vector<std::unique_ptr<GuardedTensor>> t;
    std::vector<Buffer> snapshot;
  } staged_[2];
  std::vector<Buffer> captures_[4];  // planned: each buffer as each call left it
  SparseChange change_;  // call 3's edit of call 2's inputs
  Relabeling relabel_;   // call 2's inputs as call 1's moved round (none: drawn afresh)
  // What the op kept of judging call memo_call_ (JudgeInput::memo): call 3
  // derives its reference from call 2's, call 4 (when judged) from call 3's.
  std::unique_ptr<JudgeMemo> memo_;
  int memo_call_ = 0;
  int call_ = 0;         // the call set up (one at a time) or judged (planned) last (1..4)
  bool done_ = false;    // a call failed: the case is decided
  std::vector<Buffer> previous_;       // the call before's outputs, where the data lives (see keep_previous)
  std::vector<Buffer> previous_own_;   // one at a time: the device copies previous_ points at
  int previous_call_ = 0;              // which call previous_ holds (0: none)
  std::unique_ptr<CallFrame> frame_;
  CaseOutcome outcome_;
};

}  // namespace

std::string describe_bad(const CompareStats& s, const Case& c) {
  if (s.bad == 0 && !s.excess.empty()) return s.excess;
  std::string d = fmt::format("{} of {} elements bad", s.bad, s.checked);
  if (s.unwritten) d += fmt::format(" ({} unwritten)", s.unwritten);
  if (s.bad_class) d += fmt::format(" ({} NaN/Inf class)", s.bad_class);
  d += fmt::format(", max {:.3g} ulp, max bound ratio {:.3g}", s.max_ulps, s.max_ratio);
  if (!s.first_bad.empty()) {
    auto& e = s.first_bad.front();
    const std::string tensor = e.tensor >= 0 && size_t(e.tensor) < c.tensors.size() ? c.tensors[size_t(e.tensor)].name : "?";
    d += fmt::format("; first {}[{},{}] expected {:.9g} got {:.9g}", tensor, e.row, e.col, e.expected, e.got);
  }
  return d;
}

bool plannable(const Op& op, const Case& c) { return op.plannable(c); }

namespace {

CaseOutcome run_calls(const Op& op, Backend& backend, Runner& runner, const Case& c, const ExecOptions& opt) {
  CaseRun run(op, backend, c, opt, false, runner.own_process());
  while (run.next_call()) run.judge(runner.run(run.call(), run.timeout()));
  return std::move(run.outcome());
}

bool judged_on_values(Verdict v) {
  return v == Verdict::mismatch || v == Verdict::nan_mismatch || v == Verdict::unwritten_output;
}

}  // namespace

void confirm_cached(const Op& op, Backend& backend, Runner& runner, const Case& c, const ExecOptions& opt,
                    CaseOutcome& out) {
  if (out.verdict != Verdict::cached_result || out.call < 2 || opt.first_call_inputs_of > 1) return;
  if (!runner.fresh_process()) return;  // in process the label stands: the kernel's state cannot be cleared
  ExecOptions first = opt;
  first.first_call_inputs_of = out.call, first.keep_tensors = false;
  CaseOutcome fresh;
  try {
    fresh = run_calls(op, backend, runner, c, first);
  } catch (const DeadlineReached&) {
    return;  // no time to confirm: the label stands
  }
  if (!judged_on_values(fresh.verdict)) {
    if (fresh.verdict == Verdict::pass)
      out.detail += fmt::format("; a fresh worker given call {}'s inputs as its first call answers them correctly",
                                out.call);
    return;
  }
  // The same wrong answer with no earlier call to have kept: the output
  // ignores an input that changed, which is a plain wrong value.
  out.verdict = fresh.verdict;
  out.detail = fmt::format("{}; the output equalled call {}'s, but a fresh worker given call {}'s inputs as its first "
                           "call fails too, so it is no cached answer",
                           fresh.detail, out.call - 1, out.call);
}

CaseOutcome run_case(const Op& op, Backend& backend, Runner& runner, const Case& c, const ExecOptions& opt) {
  auto start = std::chrono::steady_clock::now();
  CaseOutcome out = run_calls(op, backend, runner, c, opt);
  confirm_cached(op, backend, runner, c, opt, out);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

std::vector<CaseOutcome> run_cases(const Op& op, Backend& backend, Runner& runner, std::span<const Case> cases,
                                   const ExecOptions& opt) {
  if (cases.empty()) return {};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<CaseRun>> runs;  // every case's buffers first: OutOfMemory before any call
  for (const Case& c : cases) runs.push_back(std::make_unique<CaseRun>(op, backend, c, opt, true, runner.own_process()));
  std::vector<CallStep> steps;
  std::vector<size_t> case_of;  // steps[i] is a call of runs[case_of[i]]
  BatchScope batch(backend);  // every case's paints, draws and staged copies in a few launches
  for (size_t j = 0; j < runs.size(); ++j)
    for (CallStep& s : runs[j]->plan()) steps.push_back(std::move(s)), case_of.push_back(j);
  batch.end();
  size_t done = 0;
  // The budget's end, met while call `done` ran or was judged: the cases
  // before its case are whole, and their outcomes must not be lost.
  auto stopped = [&](const DeadlineReached& e) {
    std::vector<CaseOutcome> finished;
    for (size_t j = 0; j < case_of[std::min(done, steps.size() - 1)]; ++j) finished.push_back(std::move(runs[j]->outcome()));
    return CasesStopped(e.what(), std::move(finished));
  };
  // Judges the calls that answered; a judgement stopped at the deadline
  // (a long comparison checks it) stops the exchange as a stopped call does.
  auto judge = [&](const std::vector<RunStatus>& status) {
    try {
      for (const RunStatus& s : status) runs[case_of[done]]->judge_planned(s), ++done;
    } catch (const DeadlineReached& e) {
      throw stopped(e);
    }
  };
  while (done < steps.size()) {
    std::vector<RunStatus> status;
    try {
      runner.run_steps(backend, std::span(steps).subspan(done), status);  // stops after a crash or hang
    } catch (const DeadlineReached& e) {
      judge(status);
      throw stopped(e);
    }
    if (status.empty()) throw InfraError("the runner made none of the calls");
    judge(status);
    // A crash or hang decides its case, and the copies that set up the
    // case's next call were not made: go on with the next case.
    const RunEnd last = status.back().end;
    if (last == RunEnd::crashed || last == RunEnd::timed_out)
      while (done < steps.size() && case_of[done] == case_of[done - 1]) ++done;
  }
  const double each = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / runs.size();
  std::vector<CaseOutcome> outcomes;
  for (size_t j = 0; j < runs.size(); ++j) {
    outcomes.push_back(std::move(runs[j]->outcome()));
    outcomes.back().seconds = each;
  }
  runs.clear();  // the planned buffers go before a confirmation allocates its own
  for (size_t j = 0; j < outcomes.size(); ++j) confirm_cached(op, backend, runner, cases[j], opt, outcomes[j]);
  return outcomes;
}

CaseOutcome run_case_planned(const Op& op, Backend& backend, Runner& runner, const Case& c, const ExecOptions& opt) {
  if (!op.plannable(c)) return run_case(op, backend, runner, c, opt);
  return std::move(run_cases(op, backend, runner, std::span(&c, 1), opt).front());
}

}  // namespace assay
