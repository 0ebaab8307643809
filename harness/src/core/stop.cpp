#include "core/stop.h"

#include <csignal>
#include <cstring>

namespace assay {
namespace {

extern "C" void on_stop_signal(int sig) {
  int none = 0;
  // The first signal asks for an orderly stop; a second (any of them) is
  // obeyed at once with the default action.
  if (!detail::stop_signal.compare_exchange_strong(none, sig)) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

}  // namespace

void install_stop_handlers() {
  static_assert(std::atomic<int>::is_always_lock_free, "the handler stores to it");
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
}

std::string stop_signal_name() {
  switch (stop_signal()) {
    case 0: return "";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    default: return "signal " + std::to_string(stop_signal());
  }
}

void request_stop(int sig) { detail::stop_signal.store(sig, std::memory_order_relaxed); }

}  // namespace assay
