// After shrinking, the explanation names the properties the failure depends
// on (a dimension's divisibility, a tensor's alignment, padding or
// orientation) for every verdict, crashes and hangs included, with the
// neighbouring values that pass; and the probes stay within their budget.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "samples_support.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "shrink/properties.h"
#include "shrink/shrinker.h"

using namespace assay;
namespace fs = std::filesystem;

namespace {

const Op& gemm_op() { return op_of(Spec{}); }

gemm::Problem plain_case(int64_t m, int64_t n, int64_t k) {
  gemm::Problem c;
  c.m = m, c.n = n, c.k = k;
  c.a = gemm::make_layout(m, k, false), c.b = gemm::make_layout(k, n, false), c.c = gemm::make_layout(m, n, false);
  c.seed = 5;
  return c;
}

CaseOutcome outcome(bool fails, Verdict v) {
  CaseOutcome o;
  if (fails) o.verdict = v, o.call = 1, o.detail = "planted";
  return o;
}

// The note that starts with `prefix`, or "" when none does.
std::string note_of(const ShrinkResult& r, const std::string& prefix) {
  for (auto& n : r.notes)
    if (n.rfind(prefix, 0) == 0) return n;
  return "";
}

// Byte address of row i of a tensor, relative to its 256-byte aligned data start.
int64_t row_bytes(const gemm::Layout& l, int64_t i) { return (l.offset + i * l.row_stride) * 4; }

// Shrinks a GEMM case through the op, with a probe written on GEMM's terms.
ShrinkResult shrink_problem(const gemm::Problem& start, const std::function<CaseOutcome(const gemm::Problem&)>& on) {
  CaseProbe probe = [on](const Case& c) { return on(gemm::problem(c)); };
  return shrink(gemm_op(), Spec{}, gemm::to_case(start), on(start), probe);
}

}  // namespace

TEST_CASE("a failure when n % 4 != 0 is explained by n's divisibility, whatever the verdict", "[shrink]") {
  const Verdict v = GENERATE(Verdict::crash, Verdict::hang, Verdict::cuda_error, Verdict::out_of_bounds_write,
                             Verdict::mismatch);
  auto probe = [v](const gemm::Problem& c) { return outcome(c.m >= 1 && c.n % 4 != 0, v); };
  gemm::Problem start = plain_case(9, 7, 5);
  start.b = gemm::make_layout(5, 7, true, 2, 3);  // a layout that does not matter
  ShrinkResult r = shrink_problem(start, probe);
  INFO(explain(r));
  const gemm::Problem shrunk = gemm::problem(r.shrunk);
  CHECK(shrunk.m == 1);
  CHECK(shrunk.n == 1);
  CHECK(shrunk.k == 0);
  CHECK(shrunk.b == gemm::make_layout(0, 1, false));
  CHECK(note_of(r, "fails at n = ") == "fails at n = 1 (n % 4 != 0); passes for n = 4, n = 64");
  CHECK(note_of(r, "fails at m = ").empty());  // every m >= 1 fails: not named
  CHECK(note_of(r, "fails at k = ").empty());
  CHECK(explain(r).find("fails at n = 1 (n % 4 != 0); passes for n = 4") != std::string::npos);
}

TEST_CASE("a size threshold is not taken for divisibility", "[shrink]") {
  // Fails for n < 4: n = 4 passes, but so does n = 5, which keeps n % 4.
  auto probe = [](const gemm::Problem& c) { return outcome(c.m >= 1 && c.n >= 1 && c.n < 4, Verdict::crash); };
  ShrinkResult r = shrink_problem(plain_case(3, 3, 3), probe);
  INFO(explain(r));
  CHECK(gemm::problem(r.shrunk).n == 1);
  CHECK(note_of(r, "fails at n = ") == "fails at n = 1; passes for n = 4, n = 5, n = 64");
}

TEST_CASE("a crash on a misaligned offset names the alignment that passes", "[shrink]") {
  // Crashes when the first row of A is not 16-byte aligned and a 4-wide load is made (k >= 4).
  auto probe = [](const gemm::Problem& c) {
    return outcome(c.m >= 1 && c.k >= 4 && row_bytes(c.a, 0) % 16 != 0, Verdict::crash);
  };
  gemm::Problem start = plain_case(6, 5, 9);
  start.a = gemm::make_layout(6, 9, false, 3, 1);
  ShrinkResult r = shrink_problem(start, probe);
  INFO(explain(r));
  const gemm::Problem shrunk = gemm::problem(r.shrunk);
  CHECK(shrunk.m == 1);
  CHECK(shrunk.k == 4);
  CHECK(shrunk.a.offset == 1);
  CHECK(note_of(r, "fails at offset(A) = ") ==
        "fails at offset(A) = 1 (A not 16-byte aligned); passes for offset(A) = 0, offset(A) = 4");
  CHECK(note_of(r, "fails at ld(A)").empty());  // one row: its leading dimension is never used
  CHECK(note_of(r, "fails at k = ") == "fails at k = 4; passes for k = 3");
}

TEST_CASE("a crash on misaligned rows names the leading dimension's alignment", "[shrink]") {
  // Crashes when any row of A starts off a 16-byte boundary (k >= 4).
  auto probe = [](const gemm::Problem& c) {
    for (int64_t i = 0; i < c.m; ++i)
      if (c.k >= 4 && row_bytes(c.a, i) % 16 != 0) return outcome(true, Verdict::crash);
    return outcome(false, Verdict::crash);
  };
  gemm::Problem start = plain_case(3, 2, 8);
  start.a = gemm::make_layout(3, 8, false, 1, 0);  // ld 9
  ShrinkResult r = shrink_problem(start, probe);
  INFO(explain(r));
  const gemm::Problem shrunk = gemm::problem(r.shrunk);
  CHECK(shrunk.m == 2);
  CHECK(shrunk.k == 4);
  CHECK(shrunk.a.row_stride == 5);
  CHECK(note_of(r, "fails at ld(A) = ") ==
        "fails at ld(A) = 5 (rows of A not 16-byte aligned); passes for ld(A) = 4, ld(A) = 16");
}

TEST_CASE("a failure of transposed B names B's orientation", "[shrink]") {
  auto probe = [](const gemm::Problem& c) {
    return outcome(c.m >= 1 && c.n >= 1 && c.k >= 2 && c.b.col_stride != 1, Verdict::mismatch);
  };
  gemm::Problem start = plain_case(4, 4, 4);
  start.b = gemm::make_layout(4, 4, true);
  ShrinkResult r = shrink_problem(start, probe);
  INFO(explain(r));
  CHECK(note_of(r, "fails at B ") == "fails at B column-major; passes for B row-major");
}

TEST_CASE("property probes are bounded by their count and by the time limit", "[shrink]") {
  // Every tensor has an odd layout, and only values that are multiples of 64
  // (bytes, for layouts) pass, so every ladder is climbed to its top.
  gemm::Problem p = plain_case(3, 5, 7);
  p.a = gemm::make_layout(3, 7, true, 1, 1), p.b = gemm::make_layout(7, 5, false, 3, 3);
  p.c = gemm::make_layout(3, 5, false, 1, 5);
  const Case c = gemm::to_case(p);
  int calls = 0;
  CaseProbe probe = [&](const Case& xc) {
    ++calls;
    const gemm::Problem x = gemm::problem(xc);
    bool top = x.m % 64 == 0 || x.n % 64 == 0 || x.k % 64 == 0;
    for (const gemm::Layout* l : {&x.a, &x.b, &x.c})
      top |= l->offset * 4 % 64 == 0 || std::max(l->row_stride, l->col_stride) * 4 % 64 == 0;
    return outcome(!top, Verdict::crash);
  };
  int runs = 0;
  shrink_detail::RunClock unbounded(1e9);
  auto notes = shrink_detail::property_notes(gemm_op(), Spec{}, c, Verdict::crash, probe, unbounded, runs);
  CHECK(runs == shrink_detail::kMaxPropertyRuns);
  CHECK(calls == runs);

  // Each run 30 ms and 0.2 s: no probe that would end past the limit starts.
  CaseProbe slow = [&](const Case& x) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    return probe(x);
  };
  runs = 0;
  const auto t0 = std::chrono::steady_clock::now();
  shrink_detail::RunClock clock(0.2);
  shrink_detail::property_notes(gemm_op(), Spec{}, c, Verdict::crash, slow, clock, runs);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(runs >= 1);
  CHECK(runs <= 7);  // stopped by the clock, far below the count
  CHECK(seconds < 0.2 + 0.1);
}

TEST_CASE("the shrink steps leave a share of the time limit to the runs after them", "[shrink]") {
  // Every attempt fails and takes 20 ms: with a 0.4 s limit and 0.2 s kept
  // back, the attempts stop near 0.2 s and the clock still admits a run.
  CaseProbe slow = [](const Case&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return outcome(true, Verdict::crash);
  };
  const Case c = gemm::to_case(plain_case(50, 50, 50));
  const Spec spec;
  const auto t0 = std::chrono::steady_clock::now();
  shrink_detail::Trials t(gemm_op(), spec, slow, c, Verdict::crash, 1000, 0.4, 0.2);
  int64_t m = 50;
  while (!t.exhausted() && m > 0) {
    const int64_t sizes[3] = {--m, 50, 50};
    t.still_fails(gemm_op().resize(c, sizes, false));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(t.out_of_time());
  CHECK(t.attempts() >= 2);
  CHECK(seconds < 0.2 + 0.1);  // without the reserve they would run on to 0.4 s
  CHECK_FALSE(t.clock().out_of_time());
}

TEST_CASE("shrinking does not run the failing case again as an attempt", "[shrink]") {
  // A crash or hang costs a fresh worker or a timeout: the found case is known to fail.
  int runs = 0;
  CaseProbe probe = [&](const Case&) {
    ++runs;
    return outcome(true, Verdict::hang);
  };
  const Case c = gemm::to_case(plain_case(1, 1, 0));
  const Spec spec;
  shrink_detail::Trials t(gemm_op(), spec, probe, c, Verdict::hang, 10, 1e9);
  CHECK_FALSE(t.still_fails(c));
  CHECK(runs == 0);
  CHECK(t.still_fails(gemm::to_case(plain_case(0, 1, 0))));
  CHECK(runs == 1);
}

// Through the gate, in a worker: a real crash costs a fresh worker per probe
// that still crashes, a real hang its timeout.
TEST_CASE("a shrunk crash in a worker names n % 4 != 0 with a passing n", "[shrink][worker]") {
  auto backend = make_backend(BackendKind::host);
  Reporter silent;
  auto opt = testing::sample_gate_options(60);
  opt.out_dir = fs::temp_directory_path() / "assay-test-properties";
  Spec spec = load_spec(fs::path(ASSAY_SOURCE_DIR) / "generated_kernels/hostile/host/tail_table_n.yaml");
  KernelReport k = run_gate(spec, *backend, opt, silent);
  REQUIRE_FALSE(k.failures.empty());
  const CaseFailure& f = k.failures.front();
  INFO(describe(f.c) << "\n" << f.shrunk.explanation);
  CHECK(f.outcome.verdict == Verdict::crash);
  const std::string& e = f.shrunk.explanation;
  std::smatch m;
  REQUIRE(std::regex_search(e, m, std::regex(R"(fails at n = (\d+) \(n % 4 != 0\); passes for n = (\d+))")));
  CHECK(std::stoll(m[1]) % 4 != 0);
  CHECK(std::stoll(m[2]) % 4 == 0);
  // The shrunk case file carries the same note in its comment.
  if (!f.shrunk.case_file.empty()) {
    std::ifstream in(f.shrunk.case_file);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(text.str().find("# " + m[0].str()) != std::string::npos);
  }
}

TEST_CASE("a shrunk crash on misaligned SSE loads names what misaligns A's rows", "[shrink][worker]") {
  // _mm_load_ps faults unless each row of A starts on a 16-byte boundary:
  // an offset, a padded ld, or a compact ld = k that is not a multiple of 4.
  auto backend = make_backend(BackendKind::host);
  Reporter silent;
  auto opt = testing::sample_gate_options(150);
  opt.out_dir = fs::temp_directory_path() / "assay-test-properties";
  Spec spec = load_spec(fs::path(ASSAY_SOURCE_DIR) / "generated_kernels/gemm/host/bug_align_sse.yaml");
  KernelReport k = run_gate(spec, *backend, opt, silent);
  REQUIRE_FALSE(k.failures.empty());
  const CaseFailure& f = k.failures.front();
  INFO(describe(f.c) << "\n" << f.shrunk.explanation);
  CHECK(f.outcome.verdict == Verdict::crash);
  CHECK(std::regex_search(f.shrunk.explanation,
                          std::regex(R"(fails at ((offset|ld)\(A\) = \d+ \((rows of )?A not 16-byte aligned\))"
                                     R"(|k = \d+ \(k % 4 != 0\)); passes for)")));
}

TEST_CASE("a shrunk hang names k = 0 with a passing k", "[shrink][worker]") {
  auto backend = make_backend(BackendKind::host);
  Reporter silent;
  auto opt = testing::sample_gate_options(60);
  opt.out_dir = fs::temp_directory_path() / "assay-test-properties";
  opt.timeout_s = 0.3;  // what each probe that still hangs costs
  Spec spec = load_spec(fs::path(ASSAY_SOURCE_DIR) / "generated_kernels/hostile/host/loop_k0.yaml");
  KernelReport k = run_gate(spec, *backend, opt, silent);
  REQUIRE_FALSE(k.failures.empty());
  const CaseFailure& f = k.failures.front();
  INFO(describe(f.c) << "\n" << f.shrunk.explanation);
  CHECK(f.outcome.verdict == Verdict::hang);
  CHECK(f.shrunk.explanation.find("fails at k = 0; passes for k = 1") != std::string::npos);
}
