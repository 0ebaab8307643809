// What the shrink steps share: running candidates under a budget, each at
// most once, and moving a case's dimensions while keeping its layout style.
#pragma once
#include <algorithm>
#include <chrono>
#include <set>
#include <string>

#include "shrink/shrinker.h"

namespace assay::shrink_detail {

bool inside_spec(const Spec& spec, const Case& c);

// A time limit for case runs that may take seconds each (huge cases): no run
// is started that would end past it, judging by the longest so far, so the
// limit holds to within misjudging one run rather than overrunning by one.
class RunClock {
 public:
  explicit RunClock(double max_seconds)
      : deadline_(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                         std::chrono::duration<double>(std::min(max_seconds, 1e9)))) {}
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
  Trials(const Spec& spec, const CaseProbe& probe, const Case& failing, Verdict target, int max_attempts,
         double max_seconds, double reserve = 0)
      : spec_(spec), probe_(probe), target_(target), max_attempts_(max_attempts), clock_(max_seconds),
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

// A tensor's layout as gemm::make_layout builds it: orientation, padding
// beyond its rows (column-major) or columns (row-major), offset.
struct LayoutParts {
  bool col_major;
  int64_t pad, offset;
};
LayoutParts layout_parts(const Layout& l, int64_t rows, int64_t cols);

// The same case with m, n, k replaced, each tensor keeping its orientation
// (padding and offsets too, when `keep_layout`).
Case with_dims(const Case& c, int64_t m, int64_t n, int64_t k, bool keep_layout);

}  // namespace assay::shrink_detail
