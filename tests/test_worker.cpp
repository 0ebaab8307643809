// Out-of-process runs: whatever a candidate does in its own process (crash,
// exit, hang, scribble) becomes a verdict, and the run goes on.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fstream>

#include "backend/backend.h"
#include "exec/executor.h"
#include "exec/loader.h"
#include "exec/worker_protocol.h"
#include "exec/worker_runner.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "shrink/shrinker.h"

using namespace assay;
namespace fs = std::filesystem;

namespace {

// A correct naive f32 GEMM body; each test kernel misbehaves around it.
const char* kGemm = R"(
#include <assay/abi.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
static void gemm(const assay_call* c) {
  const DLTensor &A = c->inputs[0], &B = c->inputs[1], &C = c->outputs[0];
  auto at = [](const DLTensor& t, long r, long k) {
    return (float*)((char*)t.data + t.byte_offset) + r * t.strides[0] + k * t.strides[1];
  };
  for (long i = 0; i < C.shape[0]; ++i)
    for (long j = 0; j < C.shape[1]; ++j) {
      float acc = 0;
      for (long p = 0; p < A.shape[1]; ++p) acc += *at(A, i, p) * *at(B, p, j);
      float v = float(c->scalars[0]) * acc;
      if (c->scalars[1] != 0) v += float(c->scalars[1]) * *at(C, i, j);
      *at(C, i, j) = v;
    }
}
)";

struct Kernel {
  std::unique_ptr<Backend> backend = make_backend(BackendKind::host);
  std::unique_ptr<WorkerRunner> runner;
  Spec spec;

  explicit Kernel(const std::string& name, const std::string& body) {
    fs::path dir = fs::temp_directory_path() / "assay-test-worker";
    fs::create_directories(dir);
    spec.name = name;
    spec.file = dir / (name + ".yaml");
    spec.source = dir / (name + ".cpp");
    std::ofstream(spec.source) << kGemm << "extern \"C\" int assay_run(const assay_call* c) {\n" << body << "\n}\n";
    LoaderOptions lo;
    lo.open = false;
    lo.cache_dir = dir / "cache";
    WorkerOptions wo;
    wo.library = load_kernel(spec, lo).library;
    runner = std::make_unique<WorkerRunner>(*backend, wo);
  }
  const Op& op() const { return op_of(spec); }
  CaseOutcome run(int64_t m) { return run_case(op(), *backend, *runner, case_of(m), options()); }
  static ExecOptions options() {
    ExecOptions opt;
    opt.timeout_s = 1.0;
    return opt;
  }
  static Case case_of(int64_t m) {
    gemm::Problem c;
    c.m = m, c.n = 6, c.k = 5;
    c.a = gemm::make_layout(c.m, c.k, false), c.b = gemm::make_layout(c.k, c.n, false);
    c.c = gemm::make_layout(c.m, c.n, false);
    c.seed = 11;
    return gemm::to_case(c);
  }
};

}  // namespace

TEST_CASE("a correct kernel passes out of process", "[worker]") {
  Kernel k("worker_ok", "gemm(c); return 0;");
  CHECK(k.run(7).verdict == Verdict::pass);
  CHECK(k.runner->workers_started() == 1);  // one worker serves every call
}

TEST_CASE("a segfault in the launcher is a crash, and the next case gets a fresh worker", "[worker]") {
  Kernel k("worker_segv", "if (c->outputs[0].shape[0] == 7) *(volatile int*)nullptr = 1; gemm(c); return 0;");
  CaseOutcome crashed = k.run(7);
  CHECK(crashed.verdict == Verdict::crash);
  CHECK(crashed.detail.find("SIGSEGV") != std::string::npos);
  CaseOutcome next = k.run(5);
  CHECK(next.verdict == Verdict::pass);
  CHECK(k.runner->workers_started() == 2);
}

TEST_CASE("a crash in a worker shrinks to a small case that still crashes", "[worker][shrink]") {
  // Dies once C has more than 64 elements, whatever its shape.
  Kernel k("worker_segv_big", "if (c->outputs[0].shape[0] * c->outputs[0].shape[1] > 64) *(volatile int*)nullptr = 1;"
                              " gemm(c); return 0;");
  CaseOutcome crashed = k.run(40);  // 40 x 6
  REQUIRE(crashed.verdict == Verdict::crash);
  gemm::Problem failing;
  failing.m = 40, failing.n = 6, failing.k = 5;
  failing.a = gemm::make_layout(40, 5, false), failing.b = gemm::make_layout(5, 6, false);
  failing.c = gemm::make_layout(40, 6, false);
  failing.seed = 11;
  const int attempts = shrink_attempts_for(Verdict::crash, true, 400);
  CHECK(attempts > 0);
  CHECK(attempts <= 80);                                                  // each attempt may cost a fresh worker
  CHECK(shrink_attempts_for(Verdict::crash, false, 400) == 0);            // in process: kept as found
  CHECK(shrink_attempts_for(Verdict::hang, true, 400) == attempts);       // a timeout per attempt that still hangs
  CHECK(shrink_attempts_for(Verdict::hang, false, 400) == 0);
  CHECK(shrink_attempts_for(Verdict::mismatch, true, 400) == 400);
  ExecOptions opt;
  opt.timeout_s = 1.0;
  CHECK(gemm::to_case(failing) == Kernel::case_of(40));  // the case that crashed
  ShrinkResult r = shrink(
      k.op(), k.spec, gemm::to_case(failing), crashed,
      [&](const Case& x) { return run_case(k.op(), *k.backend, *k.runner, x, opt); }, attempts);
  CHECK(r.outcome.verdict == Verdict::crash);
  const gemm::Problem shrunk = gemm::problem(r.shrunk);
  CHECK(shrunk.m * shrunk.n > 64);
  CHECK(shrunk.m * shrunk.n <= 130);  // within 2x of the smallest crashing C
  CHECK(r.attempts <= attempts);
}

TEST_CASE("exit(0) and abort() inside assay_run are crashes, not passes", "[worker]") {
  Kernel quits("worker_exit", "gemm(c); std::exit(0);");
  CaseOutcome e = quits.run(4);
  CHECK(e.verdict == Verdict::crash);
  CHECK(e.detail.find("exited with status 0") != std::string::npos);
  Kernel aborts("worker_abort", "std::abort();");
  CaseOutcome a = aborts.run(4);
  CHECK(a.verdict == Verdict::crash);
  CHECK(a.detail.find("SIGABRT") != std::string::npos);
}

TEST_CASE("a call that never returns is a hang; the worker is killed and replaced", "[worker]") {
  Kernel k("worker_hang", "if (c->outputs[0].shape[0] == 3) for (volatile int x = 0;; x = x + 1) {} gemm(c); return 0;");
  CaseOutcome h = k.run(3);
  CHECK(h.verdict == Verdict::hang);
  CHECK(h.seconds < 5);
  CHECK(k.run(4).verdict == Verdict::pass);
}

TEST_CASE("scribbling over its own process's memory cannot change a verdict", "[worker]") {
  // Correct result, then garbage over a large part of the worker's heap.
  Kernel k("worker_scribble",
           "gemm(c); char* p = (char*)std::malloc(1 << 20); std::memset(p - 4096, 0x5a, 1 << 20); return 0;");
  CHECK(k.run(6).verdict == Verdict::pass);
  Kernel wrong("worker_scribble_wrong", "gemm(c); ((float*)c->outputs[0].data)[0] += 1.0f; "
                                        "char* p = (char*)std::malloc(1 << 20); std::memset(p, 0, 1 << 20); return 0;");
  CHECK(wrong.run(6).verdict == Verdict::mismatch);
}

TEST_CASE("the worker inherits no file descriptor but its socket", "[worker]") {
  // Fails (kernel_error) when any descriptor above 3 is open in the worker.
  Kernel k("worker_fds",
           "for (int fd = 4; fd < 1024; ++fd) if (fcntl(fd, F_GETFD) != -1 && fd > 6) return 9; gemm(c); return 0;");
  CHECK(k.run(5).verdict == Verdict::pass);
}

TEST_CASE("in a batch, each case gets the verdict it gets on its own, crashes and hangs included", "[worker]") {
  // m = 3 hangs, m = 5 crashes, m = 9 is wrong, m = 10 crashes on its second call only.
  Kernel k("worker_batch", "static int calls_m10 = 0; long m = c->outputs[0].shape[0];"
                           " if (m == 3) for (volatile int x = 0;; x = x + 1) {}"
                           " if (m == 5 || (m == 10 && ++calls_m10 == 2)) *(volatile int*)nullptr = 1;"
                           " gemm(c); if (m == 9) ((float*)c->outputs[0].data)[0] += 1.0f; return 0;");
  std::vector<Case> cases;
  for (int64_t m = 1; m <= 12; ++m) cases.push_back(Kernel::case_of(m));
  std::vector<CaseOutcome> batch = run_cases(k.op(), *k.backend, *k.runner, cases, Kernel::options());
  REQUIRE(batch.size() == cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const int64_t m = cases[i].size("m");
    INFO("m = " << m << ": " << batch[i].detail);
    const Verdict expected = m == 3 ? Verdict::hang : m == 5 || m == 10 ? Verdict::crash
                           : m == 9 ? Verdict::mismatch : Verdict::pass;
    CHECK(batch[i].verdict == expected);
    if (m == 10) CHECK(batch[i].call == 2);
    if (m != 10) CHECK(k.run(m).verdict == expected);  // the same case on its own (m = 10 counts calls per worker)
  }
  CHECK(k.runner->workers_started() >= 4);  // the hang and each crash ended a worker; the batch went on
}

TEST_CASE("planned cases: each case's calls follow each other in the worker, on fresh inputs, as one at a time",
          "[worker]") {
  // The kernel logs m and a checksum of A and B for every call it gets.
  const fs::path log = fs::temp_directory_path() / "assay-test-worker" / "planned-calls.log";
  fs::remove(log);
  Kernel k("worker_planned_log",
           "long m = c->outputs[0].shape[0]; double sum = 0;"
           " for (long i = 0; i < m * c->inputs[0].shape[1]; ++i) sum += ((float*)c->inputs[0].data)[i] * (i + 1);"
           " for (long i = 0; i < c->inputs[1].shape[0] * c->inputs[1].shape[1]; ++i)"
           "   sum += ((float*)c->inputs[1].data)[i] * (i + 7) * 1e3;"
           " FILE* f = fopen(\"" + log.string() + "\", \"a\"); fprintf(f, \"%ld %.9g\\n\", m, sum); fclose(f);"
           " gemm(c); return 0;");
  std::vector<Case> cases;
  for (int64_t m = 1; m <= 5; ++m) cases.push_back(Kernel::case_of(m));
  for (const CaseOutcome& o : run_cases(k.op(), *k.backend, *k.runner, cases, Kernel::options()))
    CHECK(o.verdict == Verdict::pass);
  std::ifstream in(log);
  std::vector<std::pair<long, double>> calls;
  for (long m; in >> m;) {
    double sum;
    in >> sum;
    calls.push_back({m, sum});
  }
  REQUIRE(calls.size() == 20);  // 4 calls each (deterministic), nothing in between
  for (size_t i = 0; i < calls.size(); ++i) {
    INFO("call " << i);
    CHECK(calls[i].first == long(i / 4 + 1));
    // calls 2 and 3: other inputs (fresh; a sparse change of A or B, as beta = 0), put in place by the worker
    if (i % 4 == 1 || i % 4 == 2) CHECK(calls[i].second != calls[i - 1].second);
    if (i % 4 == 3) CHECK(calls[i].second == calls[i - 1].second);  // call 4: call 3's again
  }
}

TEST_CASE("a reply sent before the worker died is read, though requests were left unread", "[worker]") {
  // Requests go to the worker ahead of its answers; when it dies with some
  // unread, Linux reports ECONNRESET once before the replies it had sent.
  int pair[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair) == 0);
  wire::CallRequest request;
  REQUIRE(wire::send_message(pair[0], &request, sizeof request, nullptr, 0));  // never read
  pid_t child = fork();
  if (child == 0) {
    wire::Reply done;
    done.code = 42;
    wire::send_message(pair[1], &done, sizeof done, nullptr, 0);
    _exit(0);  // with the request unread
  }
  close(pair[1]);
  int status = 0;
  waitpid(child, &status, 0);
  wire::Reply got;
  CHECK(wire::recv_message(pair[0], &got, sizeof got, nullptr, 0, nullptr));
  CHECK(got.code == 42);
  CHECK_FALSE(wire::recv_message(pair[0], &got, sizeof got, nullptr, 0, nullptr));  // then the end
  close(pair[0]);
}

namespace {
// A signal every `period_us` to this thread while alive: a profiler's tick,
// a child's exit. poll() returns EINTR at each, whatever the handler's flags.
struct Ticker {
  timer_t timer{};
  struct sigaction before {};
  static void on_tick(int) {}
  explicit Ticker(long period_us) {
    struct sigaction sa {};
    sa.sa_handler = on_tick;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGRTMIN + 5, &sa, &before);
    sigevent ev{};
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGRTMIN + 5;
    ev._sigev_un._tid = int(syscall(SYS_gettid));
    REQUIRE(timer_create(CLOCK_MONOTONIC, &ev, &timer) == 0);
    itimerspec every{};
    every.it_interval.tv_nsec = period_us * 1000;
    every.it_value = every.it_interval;
    REQUIRE(timer_settime(timer, 0, &every, nullptr) == 0);
  }
  ~Ticker() {
    timer_delete(timer);
    sigaction(SIGRTMIN + 5, &before, nullptr);
  }
};
}  // namespace

TEST_CASE("signals while the harness waits cost neither a worker's start nor a call's time limit", "[worker]") {
  Kernel k("worker_ticked", "if (c->outputs[0].shape[0] == 3) for (volatile int x = 0;; x = x + 1) {} gemm(c); return 0;");
  Ticker tick(500);  // EINTR once taken for silence (a failed start-up) or for a reply (a wait with no limit)
  CHECK(k.run(4).verdict == Verdict::pass);
  CHECK(k.runner->workers_started() == 1);
  CaseOutcome h = k.run(3);
  CHECK(h.verdict == Verdict::hang);
  CHECK(h.seconds < 5);
  CHECK(k.run(5).verdict == Verdict::pass);
}
