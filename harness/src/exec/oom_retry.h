// Device memory on a shared GPU comes and goes: another run's huge case holds
// tens of GiB for a few seconds, then gives them back. So an operation that
// ran out of memory (OutOfMemory: a case's buffers, the reference's scratch,
// no room for a large case, a worker's set-up) is not a verdict and not yet
// an error: it is tried again after a wait that doubles (0.5 s, 1 s, 2 s,
// 4 s, then 4 s each; jittered, so that runs which collided once drift
// apart) until a deadline. Only then does the OutOfMemory go on, saying how
// many attempts over how long and the memory figures. One mechanism for the
// gate, the shrinker's probes, `assay shrink` and fuzz campaigns.
#pragma once
#include <chrono>
#include <functional>
#include <string>

#include "core/error.h"

namespace assay {

class Backend;
struct Case;
struct CaseOutcome;

// How many operations waited for device memory, and how long in all.
struct MemoryWaits {
  int64_t times = 0;  // operations that waited at least once
  double seconds = 0;
};

struct OomRetry {
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline;  // no wait reaches past it; the last attempt starts there
  double first_wait_s = 0.5, max_wait_s = 4;
  double jitter = 0.25;  // each wait is scaled by a factor drawn from [1 - jitter, 1 + jitter)
  std::function<void()> release;         // before each wait: give back what this process caches
  std::function<std::string()> figures;  // the memory figures, for the final error
  MemoryWaits* waits = nullptr;          // where waits are counted; null: not counted
  // The clock and the sleep (tests replace them).
  std::function<Clock::time_point()> now = [] { return Clock::now(); };
  std::function<void(double)> sleep;  // seconds; empty: this thread sleeps

  // op(), tried again on OutOfMemory until the deadline; then the last
  // OutOfMemory, its message extended, is thrown. Other errors pass at once.
  template <class Op>
  auto run(Op&& op) const -> decltype(op()) {
    Attempts attempts(*this);
    for (;;) {
      try {
        return op();
      } catch (const OutOfMemory& e) {
        attempts.failed(e);  // throws once the deadline has come
      }
    }
  }

 private:
  class Attempts {
   public:
    explicit Attempts(const OomRetry& r);
    void failed(const OutOfMemory& e);

   private:
    const OomRetry& r_;
    int attempts_ = 0;
    double waited_ = 0, next_wait_;
  };
};

// A retry on `backend`: each wait gives back what the backend caches first
// (Backend::release_cached); the final error has `what_bytes` (what was
// asked for, 0: not said) and the backend's memory figures.
OomRetry device_retry(Backend& backend, OomRetry::Clock::time_point deadline, double what_bytes = 0,
                      MemoryWaits* waits = nullptr);

class Op;

// run(c) once the device has room for the case (Backend::make_room), under
// device_retry until `deadline`. Throws OutOfMemory with the figures when
// the memory did not come in time.
CaseOutcome run_when_room(Backend& backend, OomRetry::Clock::time_point deadline, const Op& op, const Case& c,
                          const std::function<CaseOutcome(const Case&)>& run, MemoryWaits* waits = nullptr);

}  // namespace assay
