#include "exec/oom_retry.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include <fmt/format.h>

#include "backend/backend.h"
#include "case/rng.h"
#include "core/stop.h"
#include "exec/executor.h"
#include "ops/op.h"

namespace assay {

OomRetry::Attempts::Attempts(const OomRetry& r) : r_(r), next_wait_(r.first_wait_s) {}

void OomRetry::Attempts::failed(const OutOfMemory& e) {
  ++attempts_;
  // A stop request (core/stop.h) ends the waiting as the deadline would.
  const double left = stop_requested() ? 0.0 : std::chrono::duration<double>(r_.deadline - r_.now()).count();
  if (left <= 0) {
    std::string figures = r_.figures ? r_.figures() : std::string{};
    throw OutOfMemory(fmt::format("{}; still out of device memory after {} attempt{} over {:.1f} s of waiting{}{}",
                                  e.what(), attempts_, attempts_ == 1 ? "" : "s", waited_,
                                  figures.empty() ? "" : ": ", figures));
  }
  if (r_.release) r_.release();
  // Runs that ran out together (the same sweep in step) must not retry together.
  thread_local uint64_t state = mix64(uint64_t(getpid()) ^ uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
  state = mix64(state);
  const double factor = 1 + r_.jitter * (2 * unit_double(state) - 1);
  const double wait = std::min(next_wait_ * factor, left);
  if (r_.sleep) r_.sleep(wait);
  else std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  if (r_.waits) {
    if (attempts_ == 1) ++r_.waits->times;
    r_.waits->seconds += wait;
  }
  waited_ += wait;
  next_wait_ = std::min(next_wait_ * 2, r_.max_wait_s);
}

OomRetry device_retry(Backend& backend, OomRetry::Clock::time_point deadline, double what_bytes,
                      MemoryWaits* waits) {
  OomRetry r;
  r.deadline = deadline, r.waits = waits;
  r.release = [&backend] { backend.release_cached(); };
  r.figures = [&backend, what_bytes] {
    std::string f = backend.memory_figures();
    if (what_bytes <= 0) return f;
    return fmt::format("the case needs {:.2f} GiB{}{}", what_bytes / double(size_t(1) << 30), f.empty() ? "" : "; ", f);
  };
  return r;
}

CaseOutcome run_when_room(Backend& backend, OomRetry::Clock::time_point deadline, const Op& op, const Case& c,
                          const std::function<CaseOutcome(const Case&)>& run, MemoryWaits* waits) {
  const double bytes = op.case_bytes(c);
  return device_retry(backend, deadline, bytes, waits).run([&] {
    backend.make_room(bytes);
    return run(c);
  });
}

}  // namespace assay
