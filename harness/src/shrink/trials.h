// What the shrink steps share: running candidates under a budget, each at
// most once. Moving a case's sizes is the op's (Op::resize).
#pragma once
#include <algorithm>
#include <chrono>
#include <set>
#include <string>

#include "ops/op.h"
#include "shrink/shrinker.h"

namespace assay::shrink_detail {

// Whether c satisfies the spec's requires (evaluated in op.context(c)).
bool inside_spec(const Op& op, const Spec& spec, const Case& c);

// A time limit for case runs that may take seconds each (huge cases): no run
// is started that would end past it, judging by the longest so far, so the
// limit holds to within misjudging one run rather than overrunning by one.
// `first_guess`: seconds the first run is expected to take before any has
// run here (the failing case's own time: a probe of the same size costs as
// much, and a 2^31-element case must not start a shrink it cannot finish).
class RunClock {
 public:
  explicit RunClock(double max_seconds, double first_guess = 0)
      : deadline_(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                         std::chrono::duration<double>(std::min(max_seconds, 1e9)))),
        longest_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(std::clamp(first_guess, 0.0, 1e9)))) {}
  // `reserve`: seconds before the deadline kept for later runs (the property probes).
  bool out_of_time(double reserve = 0) const {
    return std::chrono::steady_clock::now() + longest_ +
               std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(reserve)) >
           deadline_;
  }
  CaseOutcome run(const CaseProbe& probe, const Case& c) {
    const auto t0 = std::chrono::steady_clock::now();
    CaseOutcome o = probe(c);
    longest_ = std::max(longest_, std::chrono::steady_clock::now() - t0);
    return o;
  }

 private:
  std::chrono::steady_clock::time_point deadline_;
  std::chrono::steady_clock::duration longest_{};
};

class Trials {
 public:
  // `failing` is known to fail: it is not run again. The last `reserve`
  // seconds of the limit are left to whatever runs after the trials.
  // `failing_seconds`: how long the failing case took (RunClock's first guess).
  Trials(const Op& op, const Spec& spec, const CaseProbe& probe, const Case& failing, Verdict target,
         int max_attempts, double max_seconds, double reserve = 0, double failing_seconds = 0)
      : op_(op), spec_(spec), probe_(probe), target_(target), max_attempts_(max_attempts),
        clock_(max_seconds, failing_seconds),
        reserve_(reserve) {
    tried_.insert(key(failing));
  }

  // Runs c if it is new, inside the spec and within budget; true when it
  // fails with the target verdict (its outcome is then last()).
  bool still_fails(const Case& c);
  int attempts() const { return attempts_; }
  bool out_of_time() const { return clock_.out_of_time(reserve_); }
  // The run's deadline stopped an attempt (DeadlineReached): no more are made.
  bool stopped() const { return stopped_; }
  bool exhausted() const { return attempts_ >= max_attempts_ || out_of_time() || stopped_; }
  const CaseOutcome& last() const { return last_; }
  RunClock& clock() { return clock_; }  // the same limit, for the runs after the trials

 private:
  const Op& op_;
  const Spec& spec_;
  const CaseProbe& probe_;
  Verdict target_;
  int max_attempts_, attempts_ = 0;
  bool stopped_ = false;
  RunClock clock_;
  double reserve_;
  std::set<std::string> tried_;
  CaseOutcome last_;
  static std::string key(const Case& c);
};

}  // namespace assay::shrink_detail
