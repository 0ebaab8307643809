// A time after which a run must stop: a campaign's --time, a gate's --budget.
// The worker runner clips each call's wait to it and the comparison checks it
// between blocks of rows, so a case still running then is stopped (its
// worker killed) instead of overrunning the promise by one case. A stop
// request (core/stop.h: SIGTERM, SIGINT) makes every deadline pass at once.
#pragma once
#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "core/stop.h"

namespace assay {

struct Deadline {
  using Clock = std::chrono::steady_clock;
  Clock::time_point at = Clock::time_point::max();  // max: none

  static Deadline in(double seconds) {
    return {Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds))};
  }
  bool set() const { return at != Clock::time_point::max(); }
  bool passed() const { return stop_requested() || (set() && Clock::now() >= at); }
  // Seconds left (0 once passed; a very large number when none is set).
  double left() const {
    if (stop_requested()) return 0.0;
    if (!set()) return 1e18;
    return std::max(0.0, std::chrono::duration<double>(at - Clock::now()).count());
  }
};

// A case stopped at its run's deadline: not a verdict, the case is unfinished.
struct DeadlineReached : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The promise of --time and --budget: a run ends within its time plus this
// (10 s or 10 %, whichever is larger), its summary and reports written.
inline double deadline_slack(double seconds) { return std::max(10.0, 0.1 * seconds); }

}  // namespace assay
