// Shrinking: every planted bug's first failure comes back as a small case
// that fails the same way, with the dimensions that matter named.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "samples_support.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "shrink/shrinker.h"

using namespace assay;
namespace fs = std::filesystem;

TEST_CASE("the gate shrinks the first failure of each planted host bug", "[shrink][samples]") {
  auto backend = make_backend(BackendKind::host);
  Reporter silent;
  auto opt = testing::sample_gate_options(80);
  for (auto& file : testing::sample_specs(BackendKind::host)) {
    Spec spec = load_spec(file);
    if (spec.expect == "pass" || spec.expect == "crash") continue;  // crashes: test_shrink_properties.cpp
    KernelReport r = run_gate(spec, *backend, opt, silent);
    REQUIRE_FALSE(r.failures.empty());
    const CaseFailure& f = r.failures.front();
    INFO(spec.name << ": " << describe(f.c) << "\n" << f.shrunk.explanation);
    const gemm::Problem found = gemm::problem(f.c);
    if (f.shrunk.case_file.empty()) {  // already as small as it gets
      CHECK(found.m * found.n * found.k <= 8);
      continue;
    }
    const gemm::Problem shrunk = gemm::problem(load_case_file(f.shrunk.case_file).c);
    CHECK(shrunk.m <= found.m);
    CHECK(shrunk.n <= found.n);
    CHECK(shrunk.k <= found.k);
    // Small enough to read by eye: the planted bugs all show at tiny sizes.
    CHECK(shrunk.m * shrunk.n * shrunk.k <= 64);
    CHECK(f.shrunk.explanation.find(std::string(name(f.outcome.verdict))) == 0);
  }
}

TEST_CASE("shrink keeps the verdict and names the dimension that matters", "[shrink]") {
  // A kernel that is wrong only when k is odd: the shrunk case keeps k odd,
  // and the explanation says that k + 1 passes, and why.
  Spec spec;
  spec.name = "odd_k";
  gemm::Problem start;
  start.m = 40, start.n = 33, start.k = 77;
  start.a = gemm::make_layout(start.m, start.k, true, 3, 1);
  start.b = gemm::make_layout(start.k, start.n, false, 2, 0);
  start.c = gemm::make_layout(start.m, start.n, false);
  start.alpha = 0.7, start.beta = 1.3, start.recipe = Recipe::mixed;
  CaseProbe probe = [](const Case& x) {
    const gemm::Problem c = gemm::problem(x);
    CaseOutcome o;
    if (c.m > 0 && c.n > 0 && c.k % 2 == 1) o.verdict = Verdict::mismatch;  // no output, no error
    return o;
  };
  CaseOutcome failing;
  failing.verdict = Verdict::mismatch;
  ShrinkResult r = shrink(op_of(spec), spec, gemm::to_case(start), failing, probe);
  const gemm::Problem shrunk = gemm::problem(r.shrunk);
  CHECK(shrunk.k == 1);
  CHECK(shrunk.m == 1);
  CHECK(shrunk.n == 1);
  CHECK(shrunk.a == gemm::make_layout(1, 1, false));  // layout did not matter: simplified
  CHECK(shrunk.alpha == 1.0);
  CHECK(shrunk.beta == 0.0);
  CHECK(shrunk.recipe == Recipe::ints);
  CHECK_FALSE(r.flaky);
  REQUIRE(r.notes.size() == 2);
  CHECK(r.notes[0] == "fails at k = 1 (k % 2 != 0); passes for k = 2, k = 64");
  // The probe ignores values, so no input element needs to be nonzero.
  CHECK(r.notes[1] == "0 nonzeros in A, 0 in B suffice (every other input element is 0)");
}

namespace {
// A value-dependent bug: wrong only when A[2,5] and B[5,1] are both nonzero
// (and the problem reaches them).
CaseOutcome needs_two_elements(const Case& x) {
  const gemm::Problem c = gemm::problem(x);
  CaseOutcome o;
  if (c.m < 3 || c.k < 6 || c.n < 2) return o;
  double a = recipe_value(gemm::recipe_params(c, gemm::A), c.a_type, c.seed, 0, 2, 5);
  double b = recipe_value(gemm::recipe_params(c, gemm::B), c.b_type, c.seed, 1, 5, 1);
  if (a != 0 && b != 0) o.verdict = Verdict::mismatch;
  return o;
}
}  // namespace

TEST_CASE("shrink cuts the nonzeros to the few that matter (ddmin)", "[shrink]") {
  Spec spec;
  gemm::Problem start;
  start.m = 9, start.n = 7, start.k = 30;
  start.a = gemm::make_layout(start.m, start.k, false), start.b = gemm::make_layout(start.k, start.n, false);
  start.c = gemm::make_layout(start.m, start.n, false);
  start.recipe = Recipe::ints, start.seed = 11;
  CaseOutcome failing = needs_two_elements(gemm::to_case(start));
  REQUIRE(failing.verdict == Verdict::mismatch);
  ShrinkResult r = shrink(op_of(spec), spec, gemm::to_case(start), failing, needs_two_elements);
  INFO(explain(r));
  const gemm::Problem shrunk = gemm::problem(r.shrunk);
  CHECK(shrunk.m == 3);
  CHECK(shrunk.k == 6);
  CHECK(shrunk.n == 2);
  REQUIRE(shrunk.keep[0].listed == 1);
  CHECK(shrunk.keep[0].at[0] == keep_position(2, 5));
  REQUIRE(shrunk.keep[1].listed == 1);
  CHECK(shrunk.keep[1].at[0] == keep_position(5, 1));
  CHECK(explain(r).find("1 nonzero in A, 1 in B suffice") != std::string::npos);
  CHECK(r.reproduced == 3);
}

TEST_CASE("on large tensors the nonzero cut bisects a hash interval before ddmin", "[shrink]") {
  Spec spec;  // dims held: a requirement keeps them from shrinking
  spec.requires_.push_back(Requirement::parse("m == 60 && n == 40 && k == 50"));
  gemm::Problem start;
  start.m = 60, start.n = 40, start.k = 50;
  start.a = gemm::make_layout(start.m, start.k, false), start.b = gemm::make_layout(start.k, start.n, false);
  start.c = gemm::make_layout(start.m, start.n, false);
  start.recipe = Recipe::ints, start.seed = 3;
  const Case failing = gemm::to_case(start);
  ShrinkResult r = shrink(op_of(spec), spec, failing, needs_two_elements(failing), needs_two_elements, 300);
  INFO(explain(r));
  const gemm::Problem shrunk = gemm::problem(r.shrunk);
  CHECK(shrunk.m == 60);
  CHECK(r.attempts < 100);
  CHECK(shrunk.keep[0].listed == 1);
  CHECK(shrunk.keep[1].listed == 1);
  CHECK(needs_two_elements(r.shrunk).verdict == Verdict::mismatch);
}

TEST_CASE("assay shrink writes the shrunk case and its tensors", "[shrink][cli]") {
  testing::Workdir w;
  auto specs = testing::sample_specs(BackendKind::host);
  fs::path tail;
  for (auto& s : specs)
    if (s.filename() == "bug_tail.yaml") tail = s;
  REQUIRE_FALSE(tail.empty());
  auto run = w.run("check " + testing::quote(tail.string()) + " --cases 20 --out out --quiet");
  REQUIRE(run.code == 1);
  fs::path original;
  for (auto& e : fs::directory_iterator(w.dir / "out" / "host_bug_tail"))
    if (e.path().extension() == ".yaml" && e.path().string().find("shrunk") == std::string::npos) original = e.path();
  REQUIRE_FALSE(original.empty());
  auto shrunk = w.run("shrink " + testing::quote(original.string()) + " --out small");
  INFO(shrunk.output);
  CHECK(shrunk.code == 1);
  fs::path file = w.dir / "small" / (original.stem().string() + "-shrunk.yaml");
  CHECK(fs::exists(file));
  CHECK(fs::exists(w.dir / "small" / (original.stem().string() + "-shrunk") / "A.npy"));
  CHECK(shrunk.output.find("passes for") != std::string::npos);
  CHECK(shrunk.output.find(" suffice (every other input element is 0)") != std::string::npos);
  auto replay = w.run("repro " + testing::quote(file.string()));
  CHECK(replay.code == 1);
}

TEST_CASE("a kernel's regression corpus replays before the sweep", "[corpus][cli]") {
  testing::Workdir w;
  fs::path tail;
  for (auto& s : testing::sample_specs(BackendKind::host))
    if (s.filename() == "bug_tail.yaml") tail = s;
  // A case the sweep would reach late: big, with an odd layout.
  gemm::Problem c;
  c.m = 70, c.n = 9, c.k = 130;
  c.a = gemm::make_layout(c.m, c.k, true, 2, 1), c.b = gemm::make_layout(c.k, c.n, false);
  c.c = gemm::make_layout(c.m, c.n, false);
  c.recipe = Recipe::ints, c.seed = 5;
  fs::create_directories(w.dir / "corp" / "host_bug_tail");
  w.write("corp/host_bug_tail/old.yaml", to_yaml(gemm::to_case(c)));
  auto r = w.run("check " + testing::quote(tail.string()) + " --cases 5 --corpus corp --out out --json r.json --quiet");
  INFO(r.output);
  CHECK(r.code == 1);
  std::ifstream report(w.dir / "r.json");
  auto j = nlohmann::json::parse(report);
  CHECK(j["kernels"][0]["failures"][0]["case"].get<std::string>().find("gemm m=70 n=9 k=130") == 0);  // ran first
  auto broken = w.write("corp/host_bug_tail/zz.yaml", "assay_case: 2\nop: gemm\nsizes: {m: oops}\n");
  (void)broken;
  CHECK(w.run("check " + testing::quote(tail.string()) + " --cases 5 --corpus corp --out out --quiet").code == 2);
}

TEST_CASE("shrinking stops at its time limit: a huge failing case costs seconds per attempt", "[shrink]") {
  Spec spec;
  spec.name = "slow";
  gemm::Problem start;
  start.m = 4000, start.n = 3000, start.k = 2000;
  start.a = gemm::make_layout(start.m, start.k, false), start.b = gemm::make_layout(start.k, start.n, false);
  start.c = gemm::make_layout(start.m, start.n, false);
  int probes = 0;
  CaseProbe slow = [&](const Case&) {  // every case fails, each run takes 20 ms
    ++probes;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CaseOutcome o;
    o.verdict = Verdict::crash;
    return o;
  };
  CaseOutcome failing;
  failing.verdict = Verdict::crash;
  const Op& op = op_of(spec);
  ShrinkResult r = shrink(op, spec, gemm::to_case(start), failing, slow, 400, 0.1);
  CHECK(r.attempts >= 1);
  // About 0.075 s of attempts (the steps leave a quarter to what follows),
  // then one re-run (no more past the limit) and no probe that would overrun.
  CHECK(probes <= 5 + 1);
  CHECK(r.reruns == 1);
  CHECK_FALSE(r.flaky);
  const gemm::Problem shrunk = gemm::problem(r.shrunk);
  CHECK(shrunk.m * shrunk.n * shrunk.k < start.m * start.n * start.k);  // the attempts made still count
  ShrinkResult unbounded = shrink(op, spec, gemm::to_case(start), failing, [](const Case&) {
    CaseOutcome o;
    o.verdict = Verdict::crash;
    return o;
  });
  CHECK(unbounded.attempts >= 10);  // without the limit the same failure takes many more steps

  // An attempt as long as the longest so far that would end past the limit
  // is not started: with 120 ms attempts and 0.3 s (the steps' share ends
  // at 0.225 s), one attempt, the one re-run (it ends at 0.24 s), and no
  // probe (it would end at 0.36 s).
  probes = 0;
  CaseProbe slower = [&](const Case& c) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return slow(c);
  };
  ShrinkResult projected = shrink(op, spec, gemm::to_case(start), failing, slower, 400, 0.3);
  CHECK(projected.attempts >= 1);
  CHECK(probes <= 3);
  CHECK(projected.reruns == 1);

  // The failing case's own time is the first guess: a case that took 0.3 s
  // to fail starts no attempt and no re-run within 0.25 s (the limit holds
  // from the first run on, not from the second).
  probes = 0;
  CaseOutcome slow_failing = failing;
  slow_failing.seconds = 0.3;
  ShrinkResult guessed = shrink(op, spec, gemm::to_case(start), slow_failing, slower, 400, 0.25);
  CHECK(probes == 0);
  CHECK(guessed.attempts == 0);
  CHECK(guessed.reruns == 0);
  CHECK_FALSE(guessed.flaky);
  CHECK(guessed.shrunk == gemm::to_case(start));
  CHECK_THAT(explain(guessed), Catch::Matchers::Contains("not re-run"));
}
