// A request to stop the whole run: SIGTERM from a CI runner's or scheduler's
// time limit, SIGINT from a user's Ctrl-C, SIGHUP from a closed terminal.
// The first such signal only raises a flag; every Deadline then reads as
// passed (core/deadline.h), so the case in flight stops as at a budget's end,
// and the command writes its reports with what it has before it exits with
// 128 + the signal's number. A second signal ends the process at once.
#pragma once
#include <atomic>
#include <string>

namespace assay {

namespace detail {
inline std::atomic<int> stop_signal{0};
}

// Installs the handlers (idempotent). Commands that write reports call it.
void install_stop_handlers();
// The signal that asked the run to stop (0: none).
inline int stop_signal() { return detail::stop_signal.load(std::memory_order_relaxed); }
inline bool stop_requested() { return stop_signal() != 0; }
// "SIGTERM" etc., "" when none.
std::string stop_signal_name();
// For tests: as if the signal had arrived, or cleared.
void request_stop(int sig);

}  // namespace assay
