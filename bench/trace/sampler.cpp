// A wall-clock sampler of a process's main thread, for seeing where the
// harness's host time goes on a machine without perf or gdb: every
// ASSAY_SAMPLE_US microseconds (default 200) of wall time the main thread's
// stack is recorded, whether it computes, spins in a CUDA call or waits in
// poll(); at exit the stacks and the process's memory map go to
// DIR/samples.<pid>.txt. Loaded into every process that has
//   LD_PRELOAD=.../libassay_sampler.so  ASSAY_SAMPLE_DIR=DIR
// in its environment (a worker inherits it), or only those whose program
// is named in ASSAY_SAMPLE_ONLY (comma-separated, e.g.
// assay_bench_speed,assay-worker: the compilers a kernel's build runs
// need not be sampled, and cc1plus was seen to crash under the signal).
// bench/trace/samples.py
// symbolizes the files against unstripped builds of the same binaries.
// Not part of the build: scripts/build-cupti-trace.sh DIR compiles it.
//
// The signal is SA_RESTART, but poll() and sleeps return EINTR whatever the
// flags: the harness retries those, which the profiled run exercises.
#include <errno.h>  // program_invocation_short_name
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr int kDepth = 24;
constexpr size_t kMaxSamples = 150000;  // 30 s at the default rate

struct Sample {
  int depth;
  void* pc[kDepth + 1];  // pc[0]: where the thread was interrupted, then the unwound stack
};

Sample* samples = nullptr;
std::atomic<size_t> taken{0};
timer_t timer{};
bool running = false;
char out_path[512];

void on_tick(int, siginfo_t*, void* context) {
  const size_t i = taken.fetch_add(1, std::memory_order_relaxed);
  if (i >= kMaxSamples) return;
  Sample& s = samples[i];
  s.pc[0] = reinterpret_cast<void*>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
  s.depth = backtrace(s.pc + 1, kDepth);
}

void write_out() {
  if (!running) return;
  running = false;
  timer_delete(timer);
  FILE* out = std::fopen(out_path, "w");
  if (!out) return;
  std::fprintf(out, "# maps\n");
  if (FILE* maps = std::fopen("/proc/self/maps", "r")) {
    char line[1024];
    while (std::fgets(line, sizeof line, maps)) std::fputs(line, out);
    std::fclose(maps);
  }
  const size_t n = std::min(taken.load(), kMaxSamples);
  std::fprintf(out, "# samples %zu of %zu ticks\n", n, taken.load());
  for (size_t i = 0; i < n; ++i) {
    std::fprintf(out, "S %p", samples[i].pc[0]);
    // The handler's own frames and the signal trampoline come first in the
    // unwound stack; samples.py drops what lies in this library.
    for (int d = 0; d < samples[i].depth; ++d) std::fprintf(out, " %p", samples[i].pc[d + 1]);
    std::fputc('\n', out);
  }
  std::fclose(out);
}

__attribute__((constructor)) void start() {
  const char* dir = std::getenv("ASSAY_SAMPLE_DIR");
  if (!dir || !*dir) return;
  if (const char* only = std::getenv("ASSAY_SAMPLE_ONLY"); only && *only) {
    const std::string list = std::string(",") + only + ",";
    if (list.find(std::string(",") + program_invocation_short_name + ",") == std::string::npos) return;
  }
  const char* us = std::getenv("ASSAY_SAMPLE_US");
  const long period_us = us ? std::max(20L, std::atol(us)) : 200;
  std::snprintf(out_path, sizeof out_path, "%s/samples.%d.txt", dir, int(getpid()));
  samples = static_cast<Sample*>(std::calloc(kMaxSamples, sizeof(Sample)));
  if (!samples) return;
  void* warm[4];
  backtrace(warm, 4);  // loads the unwinder now, not inside the first signal
  struct sigaction sa {};
  sa.sa_sigaction = on_tick;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  const int signo = SIGRTMIN + 3;
  if (sigaction(signo, &sa, nullptr) != 0) return;
  sigevent ev{};
  ev.sigev_notify = SIGEV_THREAD_ID;  // the main thread only, not CUDA's helper threads
  ev.sigev_signo = signo;
  ev._sigev_un._tid = int(syscall(SYS_gettid));
  if (timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0) return;
  itimerspec period{};
  period.it_interval.tv_sec = period_us / 1000000, period.it_interval.tv_nsec = (period_us % 1000000) * 1000;
  period.it_value = period.it_interval;
  if (timer_settime(timer, 0, &period, nullptr) != 0) return;
  running = true;
  std::atexit(write_out);
}

__attribute__((destructor)) void stop() { write_out(); }

}  // namespace
