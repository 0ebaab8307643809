// The promises a run makes about time and memory: `assay fuzz --time` and
// `assay check --budget` end within their slack with their summary or
// report, the case running at the end stopped and recorded as unfinished;
// the host memory cap keeps the process's peak below it, at the source (the
// reference compared block by block, huge cases drawn only where they fit).
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "backend/host/host_backend.h"
#include "case/rng.h"
#include "cli_support.h"
#include "samples_support.h"
#include "core/host_memory.h"
#include "exec/executor.h"
#include "exec/runner.h"
#include "fuzz/limits.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_operands.h"
#include "ops/op.h"

using namespace assay;
namespace fs = std::filesystem;

namespace {

constexpr double kGiB = double(size_t(1) << 30);

const Op& gemm_op() { return op_of(Spec{}); }

std::string test_kernel(const std::string& file) {
  return testing::quote((testing::source_root() / "tests/kernels" / file).string());
}

struct Measured {
  int code = -1;
  std::string output;
  double seconds = 0;   // wall time
  double peak_rss = 0;  // bytes: the peak of the largest process of the run
};

// Runs `assay ARGS` in w from a child process of its own, so that
// RUSAGE_CHILDREN there covers this run's processes alone (assay, its
// campaign process, the worker, the compiler); ru_maxrss is the peak of the
// largest of them.
Measured measure(const testing::Workdir& w, const std::string& args) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    testing::CliResult r = w.run(args);
    rusage u{};
    getrusage(RUSAGE_CHILDREN, &u);
    const std::string all = fmt::format("{} {}\n", r.code, u.ru_maxrss) + r.output;
    for (size_t at = 0; at < all.size();) {
      const ssize_t n = write(fds[1], all.data() + at, all.size() - at);
      if (n <= 0) break;
      at += size_t(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string all;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) all.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  Measured m;
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  long kb = 0;
  REQUIRE(std::sscanf(all.c_str(), "%d %ld", &m.code, &kb) == 2);
  m.peak_rss = double(kb) * 1024;
  m.output = all.substr(all.find('\n') + 1);
  return m;
}

nlohmann::json read_json(const fs::path& f) {
  std::ifstream in(f);
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

std::string tail(const std::string& s) { return s.substr(s.size() > 3000 ? s.size() - 3000 : 0); }

// The unfinished case's record names a case file that loads back to the same dims.
void check_unfinished(const testing::Workdir& w, const nlohmann::json& u) {
  REQUIRE(u.is_object());
  const fs::path file = w.dir / u["case_file"].get<std::string>();
  REQUIRE(fs::exists(file));
  const Case c = load_case_file(file).c;
  const gemm::Problem p = gemm::problem(c);
  CHECK(u["dims"]["m"] == p.m);
  CHECK(u["dims"]["n"] == p.n);
  CHECK(u["dims"]["k"] == p.k);
  CHECK(u["dims"].size() == 3);
  CHECK(u["case"] == describe(c));
}

}  // namespace

TEST_CASE("fuzz --time: the case running at the end is stopped, recorded unfinished, the summary written",
          "[bounds][fuzz][cli]") {
  // 1 ms per multiply-add: the 33^3 seed case's calls take 36 s each, so
  // without the deadline the campaign would run for minutes.
  testing::Workdir w;
  Measured m = measure(w, "fuzz " + test_kernel("slow_naive_f32.yaml") +
                              " --time 5s --timeout 600 --host-memory-limit 1 --out out --json all.json");
  INFO(tail(m.output));
  CHECK(m.code == 0);  // stopped is not failed
  CHECK(m.seconds <= 5 + 10);
  CHECK(m.output.find("host memory limit 1 GiB") != std::string::npos);  // the caps, printed at the start
  auto s = read_json(w.dir / "out/slow_naive_f32/fuzz-summary.json");
  CHECK(s["finished"] == true);
  CHECK(s["distinct_failures"] == 0);
  CHECK(s["seconds"].get<double>() < 5 + 10);
  CHECK(s["time_seconds"] == 5.0);
  check_unfinished(w, s["unfinished_case"]);
  CHECK(s["unfinished_case"]["why"].get<std::string>().find("deadline") != std::string::npos);
  CHECK(s["host_memory"]["limit_bytes"] == kGiB);
  CHECK(s["host_memory"]["peak_rss_bytes"].get<double>() < kGiB);
  CHECK(m.peak_rss < kGiB);
  CHECK(read_json(w.dir / "all.json")["kernels"][0] == s);
}

TEST_CASE("fuzz --time in process: the watchdog ends the campaign with its summary", "[bounds][fuzz][cli]") {
  // In process a call cannot be stopped: the process ends, summary written,
  // 2 s before the slack runs out.
  testing::Workdir w;
  Measured m = measure(w, "fuzz " + test_kernel("slow_naive_f32.yaml") +
                              " --time 5s --timeout 600 --isolation in-process --out out");
  INFO(tail(m.output));
  CHECK(m.code == 0);
  CHECK(m.seconds <= 5 + 10);
  auto s = read_json(w.dir / "out/slow_naive_f32/fuzz-summary.json");
  CHECK(s["finished"] == true);
  check_unfinished(w, s["unfinished_case"]);
  CHECK(s["unfinished_case"]["why"].get<std::string>().find("in process") != std::string::npos);
}

TEST_CASE("fuzz --host-memory-limit: a process that outgrows it stops at once, with its summary",
          "[bounds][fuzz][cli]") {
  // An in-process candidate leaking 64 MiB a call (every 0.25 s): without the
  // watchdog the process would pass 1.5 GiB in the campaign's 20 s.
  testing::Workdir w;
  Measured m = measure(w, "fuzz " + test_kernel("leaky_f32.yaml") +
                              " --time 20s --isolation in-process --host-memory-limit 0.5 --out out");
  INFO(tail(m.output));
  CHECK(m.code == 3);  // stopped early, nothing found
  CHECK(m.seconds < 15);
  auto s = read_json(w.dir / "out/leaky_f32/fuzz-summary.json");
  CHECK(s["finished"] == true);
  REQUIRE(s["stopped"].is_string());
  CHECK(s["stopped"].get<std::string>().find("host memory limit") != std::string::npos);
  // The watchdog looks every 0.25 s: at most a call or two past the limit.
  CHECK(m.peak_rss < 0.5 * kGiB + 192.0 * (1 << 20));
}

TEST_CASE("check --budget: the case running at the end is stopped, recorded unfinished, the report written",
          "[bounds][cli]") {
  testing::Workdir w;
  Measured m = measure(w, "check " + test_kernel("slow_naive_f32.yaml") +
                              " --budget 5 --timeout 600 --host-memory-limit 1 --out out --json r.json --corpus none");
  INFO(tail(m.output));
  CHECK(m.code == 0);
  CHECK(m.seconds <= 5 + 10);
  CHECK(m.output.find("limits: host memory 1 GiB") != std::string::npos);
  CHECK(m.output.find("unfinished at the budget's end") != std::string::npos);
  auto k = read_json(w.dir / "r.json")["kernels"][0];
  CHECK(k["verdict"] == "pass");
  CHECK(k["seconds"].get<double>() < 5 + 10);
  check_unfinished(w, k["unfinished_case"]);
  CHECK(k["host_memory"]["limit_bytes"] == kGiB);
  CHECK(m.peak_rss < kGiB);
}

TEST_CASE("check --budget with planned cases: the cases of an exchange that finished before the end keep their results",
          "[bounds][cli]") {
  // 16 small cases planned into one exchange: the first (k = 0) finishes at
  // once, the second (37 x 45 x 29: 48 s a call) is stopped at the budget's end.
  testing::Workdir w;
  Measured m = measure(w, "check " + test_kernel("slow_naive_f32.yaml") +
                              " --budget 5 --batch 16 --timeout 600 --out out --json r.json --corpus none");
  INFO(tail(m.output));
  CHECK(m.code == 0);
  CHECK(m.seconds <= 5 + 10);
  auto k = read_json(w.dir / "r.json")["kernels"][0];
  CHECK(k["cases_run"] == 1);
  CHECK(k["cases_passed"] == 1);
  check_unfinished(w, k["unfinished_case"]);
  CHECK(k["unfinished_case"]["dims"]["m"] == 37);
  CHECK(k["unfinished_case"]["dims"]["k"] == 29);
}

TEST_CASE("check --host-memory-limit: cases that need more are skipped, and the peak stays below it",
          "[bounds][cli]") {
  // The host sweep's "m (n) past 65,535 tiles" cases (2097153 x 2 x 5 and
  // 2 x 2097153 x 5) take the process past 0.5 GiB; under a 0.3 GiB cap they
  // are skipped, and the process stays under it.
  const std::string spec = testing::quote((testing::source_root() / "generated_kernels/gemm/host/naive_f32.yaml").string());
  const double cap = 0.3 * kGiB;
  testing::Workdir w;
  Measured capped = measure(w, "check " + spec + " --cases 14 --corpus none --out out --json capped.json --host-memory-limit 0.3");
  INFO(tail(capped.output));
  CHECK(capped.code == 0);
  auto k = read_json(w.dir / "capped.json")["kernels"][0];
  int skipped = 0;
  for (auto& [reason, n] : k["skip_reasons"].items())
    if (reason.find("--host-memory-limit") != std::string::npos && reason.find("65,535 tiles") != std::string::npos)
      skipped += n.get<int>();
  CHECK(skipped == 2);
  CHECK(capped.peak_rss < cap);
  Measured open = measure(w, "check " + spec + " --cases 14 --corpus none --out out --json open.json --host-memory-limit 4");
  INFO(tail(open.output));
  CHECK(open.code == 0);
  CHECK(read_json(w.dir / "open.json")["kernels"][0]["cases_run"].get<int>() ==
        k["cases_run"].get<int>() + 2);
  CHECK(open.peak_rss > cap);  // so the cap is what kept the first run below it
}

namespace {

// A correct GEMM with two planted errors: element (3, 5), and one in the
// reference's second block of rows.
int64_t g_bad_row = 0;
int gemm_with_two_errors(const assay_call* call) {
  const DLTensor &A = call->inputs[0], &B = call->inputs[1], &C = call->outputs[0];
  auto at = [](const DLTensor& t, int64_t r, int64_t c) -> float& {
    return reinterpret_cast<float*>(static_cast<char*>(t.data) + t.byte_offset)[r * t.strides[0] + c * t.strides[1]];
  };
  const double alpha = call->scalars[0], beta = call->scalars[1];
  for (int64_t i = 0; i < C.shape[0]; ++i)
    for (int64_t j = 0; j < C.shape[1]; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < A.shape[1]; ++p) acc += double(at(A, i, p)) * double(at(B, p, j));
      at(C, i, j) = float(alpha * acc + (beta != 0 ? beta * at(C, i, j) : 0.0));
    }
  at(C, 3, 5) += 100.0f;
  at(C, g_bad_row, 7) += 100.0f;
  return ASSAY_OK;
}

gemm::Problem case_of(int64_t m, int64_t n, int64_t k, bool col_major_c) {
  gemm::Problem c;
  c.m = m, c.n = n, c.k = k;
  c.a = gemm::make_layout(m, k, false), c.b = gemm::make_layout(k, n, false);
  c.c = gemm::make_layout(m, n, col_major_c, 3, 1);
  c.alpha = 1, c.beta = 0.7, c.recipe = Recipe::ints, c.seed = 17;
  return c;
}

}  // namespace

TEST_CASE("the comparison runs block by block of rows and counts every block", "[bounds]") {
  // 1500 x 3000 is past one block (2^22 elements of C): two blocks on the host.
  const gemm::Problem row = case_of(1500, 3000, 2, false), col = case_of(1500, 3000, 2, true);
  const int64_t block = reference::reference_block_rows(row.m, row.n, row.k);
  REQUIRE(block < row.m);
  g_bad_row = block + 50;
  for (const gemm::Problem& c : {row, col}) {
    HostBackend be;
    InProcessRunner runner(gemm_with_two_errors);
    ExecOptions opt;
    CaseOutcome o = run_case(gemm_op(), be, runner, gemm::to_case(c), opt);
    INFO(describe(gemm::to_case(c)) << ": " << o.detail);
    CHECK(o.verdict == Verdict::mismatch);
    CHECK(o.stats.checked == c.m * c.n);
    CHECK(o.stats.bad == 2);
    REQUIRE(o.stats.first_bad.size() == 2);
    CHECK(o.stats.first_bad[0].tensor == gemm::C);
    CHECK(o.stats.first_bad[1].tensor == gemm::C);
    CHECK(o.stats.first_bad[0].row == 3);
    CHECK(o.stats.first_bad[0].col == 5);
    CHECK(o.stats.first_bad[1].row == g_bad_row);
    CHECK(o.stats.first_bad[1].col == 7);
  }
}

namespace {

int naive(const assay_call* call) {
  g_bad_row = -1;
  const DLTensor &A = call->inputs[0], &B = call->inputs[1], &C = call->outputs[0];
  auto at = [](const DLTensor& t, int64_t r, int64_t c) -> float& {
    return reinterpret_cast<float*>(static_cast<char*>(t.data) + t.byte_offset)[r * t.strides[0] + c * t.strides[1]];
  };
  for (int64_t i = 0; i < C.shape[0]; ++i)
    for (int64_t j = 0; j < C.shape[1]; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < A.shape[1]; ++p) acc += double(at(A, i, p)) * double(at(B, p, j));
      at(C, i, j) = float(call->scalars[0] * acc + (call->scalars[1] != 0 ? call->scalars[1] * at(C, i, j) : 0.0));
    }
  return ASSAY_OK;
}

}  // namespace

TEST_CASE("host_bytes bounds what a case takes of the harness's host memory", "[bounds]") {
  // Measured in a child process of its own: its peak resident set less what
  // it held before the case (the host backend: buffers and reference alike).
  for (const gemm::Problem& c :
       {case_of(2097153, 2, 5, false), case_of(2, 2097153, 5, false), case_of(700, 900, 300, true)}) {
    const double estimate = gemm::host_bytes(c, BackendKind::host);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      double grew = -1;
      {
        HostBackend be;
        InProcessRunner runner(naive);
        ExecOptions opt;
        const double before = resident_bytes();
        const bool passed = run_case(gemm_op(), be, runner, gemm::to_case(c), opt).verdict == Verdict::pass;
        if (passed && peak_resident_bytes() >= before) grew = peak_resident_bytes() - before;
      }
      (void)!write(fds[1], &grew, sizeof grew);
      _exit(0);
    }
    close(fds[1]);
    double grew = -2;
    (void)!read(fds[0], &grew, sizeof grew);
    close(fds[0]);
    waitpid(pid, nullptr, 0);
    INFO(describe(gemm::to_case(c)) << ": grew " << grew / (1 << 20) << " MiB, estimate " << estimate / (1 << 20) << " MiB");
    CHECK(grew > 0);  // it passed, and took memory
    CHECK(grew <= estimate);
  }
}

TEST_CASE("host_bytes: the reference is held one block at a time, C's images and one input's at most", "[bounds]") {
  // On cuda the harness's host memory is its images of C (and one of A or B
  // when an input came back changed) and a block of the reference: a huge A
  // costs one image of it, not the 24 bytes per element of C of three FP64 arrays.
  gemm::Problem index32 = case_of((int64_t(1) << 20) + 7, 3, 2051, false);  // A past 2^31 elements
  gemm::Problem wide_c = case_of(int64_t(1) << 21, 1025, 3, false);          // C past 2^31 elements
  const double a_bytes = double(gemm::tensors(index32)[gemm::A].span()) * 4;
  const double c_bytes = double(gemm::tensors(wide_c)[gemm::C].span()) * 4;
  CHECK(gemm::host_bytes(index32, BackendKind::cuda) < 1.01 * a_bytes);
  CHECK(gemm::host_bytes(wide_c, BackendKind::cuda) < 3 * c_bytes + double(64 << 20));  // three images of C
  CHECK(gemm::host_bytes(wide_c, BackendKind::cuda) < double(wide_c.m) * double(wide_c.n) * 24);  // the FP64 arrays alone were more
}

TEST_CASE("huge fuzz cases are drawn only where the host memory cap holds them too", "[bounds][fuzz]") {
  Spec spec;
  for (const char* t : {"a", "b", "c"}) spec.set_dtype(t, DType::f32);
  const Op& op = gemm_op();
  gemm::Problem from;
  from.m = 37, from.n = 45, from.k = 29;
  from.a = gemm::make_layout(37, 29, false), from.b = gemm::make_layout(29, 45, false);
  from.c = gemm::make_layout(37, 45, false);
  from.seed = 7, from.origin = "fuzz";  // as decode names it
  const double device = 120 * kGiB, host = 4 * kGiB;
  const auto open = fuzz::campaign_limits(BackendKind::cuda, device);
  const auto capped = fuzz::campaign_limits(BackendKind::cuda, device, host);
  int over_host = 0, huge_capped = 0;
  const Case start = gemm::to_case(from);
  for (int i = 0; i < 20000; ++i) {
    Case x = op.mutate(start, mix64(uint64_t(i)), open);
    if (op.is_huge(x, open)) over_host += op.host_bytes(x, BackendKind::cuda) > host;
    Case y = op.mutate(start, mix64(uint64_t(i)), capped);
    if (!op.is_huge(y, capped)) continue;
    ++huge_capped;
    INFO(describe(y));
    CHECK(gemm::host_bytes(gemm::problem(y), BackendKind::cuda) <= host);
    CHECK(op.host_bytes(y, BackendKind::cuda) <= host);
    CHECK(gemm::case_bytes(gemm::problem(y)) <= device);
    auto bytes = op.encode(y, capped);
    CHECK(op.decode(bytes.data(), bytes.size(), spec, capped) == y);
  }
  CHECK(over_host > 0);     // without the cap some huge cases would not fit it
  CHECK(huge_capped > 50);  // with it, huge cases that fit are still drawn (grid limits, an index past 2^31)
}

TEST_CASE("a bad --host-memory-limit is bad input, said plainly", "[bounds][cli][bad_input]") {
  testing::Workdir w;
  for (const std::string cmd : {"fuzz", "check"})
    for (const char* bad : {"0", "-1", "lots", "2x"}) {
      auto r = w.run(cmd + " " + test_kernel("slow_naive_f32.yaml") + " --host-memory-limit " + bad);
      INFO(cmd << " " << bad << ": " << r.output);
      CHECK(r.code == 2);
      CHECK(r.output.find("expected a positive number of GiB") != std::string::npos);
    }
}

TEST_CASE("fuzz --time in process: a failure whose shrink the watchdog cuts short is kept", "[bounds][fuzz][cli]") {
  // The kernel fails once, then every call takes 30 s: the first shrink
  // attempt is still running when the watchdog ends the campaign.
  testing::Workdir w;
  Measured m = measure(w, "fuzz " + test_kernel("stalls_after_failing_f32.yaml") +
                              " --time 5s --timeout 600 --isolation in-process --out out");
  INFO(tail(m.output));
  CHECK(m.code == 1);
  CHECK(m.seconds <= 5 + 10);
  auto s = read_json(w.dir / "out/stalls_after_failing_f32/fuzz-summary.json");
  CHECK(s["finished"] == true);
  REQUIRE(s["distinct_failures"] == 1);
  auto f = s["failures"][0];
  CHECK(f["verdict"] == "mismatch");
  CHECK(f["explanation"].get<std::string>().find("not shrunk") != std::string::npos);
  CHECK(gemm::problem(load_case_file(w.dir / f["case_file"].get<std::string>()).c).k >= 7);
}
