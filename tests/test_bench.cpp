// assay bench end to end on the host backend: real kernels in their worker,
// the planted cheats of generated_kernels/bench/host, the cross-check of the
// worker's timestamps and the command's exit codes (docs/bench.md).
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>

#include <cmath>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "bench/bench.h"
#include "bench/bench_report.h"
#include "bench/bench_shapes.h"
#include "cli_support.h"
#include "samples_support.h"
#include "core/error.h"
#include "ops/op.h"
#include "spec/spec.h"

using namespace assay;
using namespace assay::bench;
namespace fs = std::filesystem;

namespace {

using testing::source_root;
fs::path sample(const std::string& family, const std::string& file) {
  return source_root() / "generated_kernels" / family / "host" / file;
}

// Quick settings: small shapes, short timing (the rules are the defaults' shape).
BenchOptions quick(std::vector<BenchShape> shapes) {
  BenchOptions o;
  o.shapes = std::move(shapes);
  // The cap only bites on a loaded machine (a quiet one meets min_samples
  // in well under a second); tests below count samples, so it is generous.
  o.rule.min_seconds = 0.05, o.rule.min_samples = 10, o.rule.timeout_seconds = 8;
  o.warmup_seconds = 0.02;
  o.loader.cache_dir = fs::temp_directory_path() / "assay-test-kernel-cache";
  o.out_dir = fs::temp_directory_path() / "assay-test-bench";
  return o;
}
const BenchShape kSmall = {{"m", 48}, {"n", 40}, {"k", 32}};

}  // namespace

TEST_CASE("the cross-check of a batch's timestamps against the harness's clock", "[bench]") {
  const StepCost cost{1e-4, 1e-5};
  const std::vector<double> honest(20, 1e-3);  // 20 calls of 1 ms
  CHECK(cross_check(honest, 0.0202, 0.0205, cost).empty());
  // Work outside the timed calls: the harness waited 30 ms more than the worker timed.
  CHECK_THAT(cross_check(honest, 0.0202, 0.0502, cost), Catch::Matchers::Contains("outside the timed calls"));
  // ... unless the kernel's runqueue accounting says those 30 ms were spent waiting for a CPU (a loaded machine).
  CHECK(cross_check(honest, 0.0202, 0.0502, cost, 0.030).empty());
  CHECK_FALSE(cross_check(honest, 0.0202, 0.0502, cost, 0.010).empty());
  // A forged timer that shrinks every interval tenfold.
  const std::vector<double> forged(20, 1e-4);
  CHECK_FALSE(cross_check(forged, 0.00202, 0.0205, cost).empty());
  CHECK_FALSE(cross_check(forged, 0.00202, 0.0205, cost, 0.002).empty());  // waiting does not excuse missing running time
  // Forged call times under a true span: the calls cover too little of it.
  CHECK_THAT(cross_check(forged, 0.0202, 0.0205, cost), Catch::Matchers::Contains("per-call times were forged"));
  // A span longer than the harness's own clock, or calls longer than their span, cannot be.
  CHECK_FALSE(cross_check(honest, 0.05, 0.0205, cost).empty());
  CHECK_FALSE(cross_check(honest, 0.010, 0.0205, cost).empty());
  const std::vector<double> negative = {1e-3, -1e-3};
  CHECK_FALSE(cross_check(negative, 0.001, 0.002, cost).empty());
  // The harness's own steps between calls (a cold run's flush) are allowed for.
  const StepCost flushing{1e-4, 4e-3};
  CHECK(cross_check(honest, 0.1, 0.1003, flushing).empty());
  CHECK_FALSE(cross_check(honest, 0.1, 0.1003, cost).empty());
}

TEST_CASE("bench shapes: read from YAML, matched to the op's sizes by name", "[bench]") {
  testing::Workdir w;
  const fs::path good = w.write("shapes.yaml", "shapes: [{m: 64, n: 32, k: 16}, {m: 1, n: 2, k: 3}]\n");
  const std::vector<BenchShape> shapes = load_shapes_file(good);
  REQUIRE(shapes.size() == 2);
  CHECK(shape_text(shapes[0]) == "m=64 n=32 k=16");
  CHECK_THROWS_AS(load_shapes_file(w.write("bad.yaml", "shapes: [{m: -1}]\n")), InputError);
  CHECK_THROWS_AS(load_shapes_file(w.write("empty.yaml", "shapes: []\n")), InputError);
  CHECK_THROWS_AS(load_shapes_file(w.dir / "missing.yaml"), InputError);
  const Spec spec = load_spec(sample("gemm", "naive_f32.yaml"));
  const Case c = bench_case(op_of(spec), spec, shapes[0], 7);
  CHECK(c.size("m") == 64);
  CHECK(c.size("k") == 16);
  CHECK(c.seed == 7);
  CHECK_THROWS_WITH(bench_case(op_of(spec), spec, {{"m", 4}, {"n", 4}}, 1), Catch::Matchers::Contains("lacks size 'k'"));
  CHECK_THROWS_WITH(bench_case(op_of(spec), spec, {{"m", 4}, {"n", 4}, {"k", 4}, {"q", 1}}, 1),
                    Catch::Matchers::Contains("no size 'q'"));
}

TEST_CASE("bench: the host's default shapes are the op's divided by 8", "[bench]") {
  const std::vector<BenchShape> h = host_shapes(default_op("gemm")->bench_shapes());
  REQUIRE(h.size() == 3);
  CHECK(shape_text(h[0]) == "m=512 n=512 k=512");
  CHECK(shape_text(h[1]) == "m=1024 n=1024 k=128");
  CHECK(shape_text(h[2]) == "m=2 n=512 k=1792");
  CHECK(shape_text(host_shapes({{{"m", 3}, {"n", 4096}, {"k", 4096}}})[0]) == "m=1 n=512 k=512");  // never 0
}

TEST_CASE("bench on the host: a kernel against another and against the reference", "[bench]") {
  std::unique_ptr<Backend> be = make_backend(BackendKind::host);
  const Spec naive = load_spec(sample("gemm", "naive_f32.yaml"));
  const Spec tiled = load_spec(sample("gemm", "tiled_f32.yaml"));
  const BenchReport r = run_bench(naive, &tiled, *be, quick({kSmall, {{"m", 64}, {"n", 64}, {"k", 64}}}));
  REQUIRE(r.setup_error.empty());
  REQUIRE(r.shapes.size() == 2);
  for (const ShapeResult& s : r.shapes) {
    INFO(s.shape << ": " << s.verdict << " " << s.detail);
    CHECK(s.candidate.timed());
    CHECK(s.baseline.timed());
    REQUIRE(s.speed);
    CHECK((s.verdict == "FASTER" || s.verdict == "SLOWER" || s.verdict == "SAME"));
    CHECK(s.candidate.cold.samples >= 10);
    CHECK(s.candidate.hot.samples >= 10);
    CHECK(s.candidate.cold.median > 0);
    CHECK(s.floor_seconds > 0);  // 2mnk FLOP at the host's bound
    CHECK(s.candidate.cold.median > s.floor_seconds);
  }
  CHECK(r.exit_code() == 0);
  const nlohmann::json j = to_json(r);
  CHECK(j["tool"] == "assay bench");
  CHECK(j["shapes"][0]["candidate"]["cold"]["median"].get<double>() > 0);
  CHECK(j["shapes"][0]["flops"].get<double>() == 2.0 * 48 * 40 * 32);
  // Each side's calls on fresh input sets (the first-sight probe) are reported.
  REQUIRE(j["shapes"][0]["candidate"]["first_sight"].size() == size_t(kFirstSightSets));
  REQUIRE(j["shapes"][0]["baseline"]["first_sight"].size() == size_t(kFirstSightSets));
  for (const ShapeResult& s : r.shapes)
    for (double t : s.candidate.first_sight) CHECK(t > 0);
  CHECK_THAT(to_junit(r), Catch::Matchers::Contains("<testsuite name=\"assay bench\" tests=\"2\" failures=\"0\""));
  CHECK_THAT(to_markdown(r), Catch::Matchers::Contains("m=48 n=40 k=32"));

  // The same kernel against itself: no difference is called (the IQRs overlap).
  const BenchReport same = run_bench(naive, &naive, *be, quick({{{"m", 96}, {"n", 96}, {"k", 64}}}));
  REQUIRE(same.shapes.size() == 1);
  REQUIRE(same.shapes[0].speed);
  INFO(same.shapes[0].detail);
  CHECK(same.shapes[0].verdict == "SAME");
  CHECK(std::abs(std::log(same.shapes[0].speed->speedup)) < std::log(1.5));

  // Against the op's FP64 reference (timed in the harness's process).
  const BenchReport ref = run_bench(naive, nullptr, *be, quick({kSmall}));
  REQUIRE(ref.shapes.size() == 1);
  CHECK(ref.shapes[0].baseline.timed());
  CHECK(ref.shapes[0].speed);
  CHECK(ref.baseline == "reference");
}

TEST_CASE("bench on the host: each planted cheat gets its verdict and no speedup", "[bench][cheats]") {
  std::unique_ptr<Backend> be = make_backend(BackendKind::host);
  const Spec naive = load_spec(sample("gemm", "naive_f32.yaml"));
  const fs::path dir = source_root() / "generated_kernels" / "bench" / "host";
  int planted = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".yaml") continue;
    const Spec cheat = load_spec(e.path());
    REQUIRE_FALSE(cheat.bench_expect.empty());
    // A shape where computing costs far more than copying a remembered output.
    const BenchShape shape = {{"m", 64}, {"n", 64}, {"k", 256}};
    const BenchReport r = run_bench(cheat, &naive, *be, quick({shape}));
    REQUIRE(r.shapes.size() == 1);
    INFO(cheat.name << ": " << r.shapes[0].verdict << ": " << r.shapes[0].detail);
    CHECK(r.shapes[0].verdict == cheat.bench_expect);
    CHECK_FALSE(r.shapes[0].speed);
    CHECK(r.exit_code() == 1);
    ++planted;
  }
  CHECK(planted >= 6);
}

TEST_CASE("bench on the host: a content-keyed cache the floor cannot see is caught on fresh inputs", "[bench][cheats]") {
  // k = 8: copying the 512 x 512 output costs more than the floor of 2mnk
  // FLOP at the host's bound, but far less than computing it.
  std::unique_ptr<Backend> be = make_backend(BackendKind::host);
  const Spec naive = load_spec(sample("gemm", "naive_f32.yaml"));
  const Spec cache = load_spec(sample("bench", "fingerprint_cache.yaml"));
  const BenchReport r = run_bench(cache, &naive, *be, quick({{{"m", 512}, {"n", 512}, {"k", 8}}}));
  REQUIRE(r.shapes.size() == 1);
  const ShapeResult& s = r.shapes[0];
  INFO(s.verdict << ": " << s.detail);
  CHECK(s.verdict == "cached_result");
  CHECK_FALSE(s.speed);
  REQUIRE(s.candidate.first_sight.size() == size_t(kFirstSightSets));
  // The honest baseline's repeats are no faster than its first calls.
  INFO("baseline " << s.baseline.verdict << ": " << s.baseline.detail);
  CHECK(s.baseline.timed());
}

TEST_CASE("bench: half-precision inputs pass each element's f32 bound at large k, not the RMS rule", "[bench][cheats]") {
  // At k = 4096 the worst-case bound k u sum|ab| admits the ~sqrt(k) 2^-11
  // errors of inputs rounded to half; the RMS over the 4096 outputs does not.
  std::unique_ptr<Backend> be = make_backend(BackendKind::host);
  const Spec naive = load_spec(sample("gemm", "naive_f32.yaml"));
  const Spec half = load_spec(sample("bench", "silent_fp16.yaml"));
  const BenchShape deep = {{"m", 64}, {"n", 64}, {"k", 4096}};
  const BenchReport r = run_bench(half, &naive, *be, quick({deep}));
  REQUIRE(r.shapes.size() == 1);
  INFO(r.shapes[0].verdict << ": " << r.shapes[0].detail);
  CHECK(r.shapes[0].verdict == "mismatch");
  CHECK_THAT(r.shapes[0].detail, Catch::Matchers::Contains("RMS error"));
  CHECK(r.shapes[0].candidate.detail.find("the gate") == std::string::npos);  // each element passed the gate
  // A correct f32 kernel at the same shape keeps to the rule (the baseline was timed).
  INFO("baseline " << r.shapes[0].baseline.verdict << ": " << r.shapes[0].baseline.detail);
  CHECK(r.shapes[0].baseline.timed());
}

TEST_CASE("assay bench on the command line: exit codes, reports, bad input", "[bench][cli]") {
  testing::Workdir w;
  const std::string naive = testing::quote(sample("gemm", "naive_f32.yaml").string());
  const std::string tiled = testing::quote(sample("gemm", "tiled_f32.yaml").string());
  w.write("shapes.yaml", "shapes: [{m: 32, n: 32, k: 32}]\n");
  const std::string quick = " --shapes shapes.yaml --min-seconds 0.05 --max-seconds 1 --quiet";
  testing::CliResult ok = w.run("bench " + naive + " --baseline " + tiled + quick + " --json r.json --junit r.xml --markdown r.md --html r.html");
  INFO(ok.output);
  if (ok.code != 0) {  // --quiet prints nothing: the report says which verdict and why
    std::ifstream md(w.dir / "r.md");
    INFO(std::string(std::istreambuf_iterator<char>(md), {}));
    CHECK(ok.code == 0);
  }
  CHECK(fs::exists(w.dir / "r.json"));
  CHECK(fs::exists(w.dir / "r.xml"));
  CHECK(fs::exists(w.dir / "r.md"));
  CHECK(fs::exists(w.dir / "r.html"));
  // A claim no kernel meets, and one every kernel meets.
  CHECK(w.run("bench " + naive + " --baseline " + tiled + quick + " --require-speedup 1000").code == 1);
  CHECK(w.run("bench " + naive + " --baseline " + tiled + quick + " --require-speedup 0.0001").code == 0);
  // Bad input: a shape the op has not, a missing spec, a baseline of another op.
  w.write("odd.yaml", "shapes: [{rows: 3}]\n");
  testing::CliResult odd = w.run("bench " + naive + " --shapes odd.yaml --quiet");
  CHECK(odd.code == 2);
  CHECK_THAT(odd.output, Catch::Matchers::Contains("lacks size"));
  CHECK(w.run("bench missing.yaml --quiet").code == 2);
  const std::string softmax = testing::quote(sample("softmax", "chunked_f32.yaml").string());
  CHECK(w.run("bench " + naive + " --baseline " + softmax + quick).code == 2);
}

TEST_CASE("bench: each side is judged by its own spec (a baseline of sorted: false, another op's claim)", "[bench]") {
  std::unique_ptr<Backend> be = make_backend(BackendKind::host);
  const Spec sorted = load_spec(sample("moe_topk", "sigmoid_grouped_f32.yaml"));
  const Spec unsorted = load_spec(sample("moe_topk", "sigmoid_grouped_unsorted_f32.yaml"));
  const BenchShape shape = {{"tokens", 256}, {"experts", 64}, {"topk", 6}};
  const BenchReport r = run_bench(sorted, &unsorted, *be, quick({shape}));
  REQUIRE(r.shapes.size() == 1);
  INFO(r.shapes[0].verdict << ": " << r.shapes[0].detail << "; baseline " << r.shapes[0].baseline.verdict << ": "
                           << r.shapes[0].baseline.detail);
  CHECK(r.shapes[0].candidate.timed());
  CHECK(r.shapes[0].baseline.timed());  // its experts in index order are right for its own spec
  // A baseline whose tensors differ (no bias) is refused with the reason.
  const Spec softmax = load_spec(sample("moe_topk", "softmax_topk_f32.yaml"));
  CHECK_THROWS_WITH(run_bench(sorted, &softmax, *be, quick({shape})), Catch::Matchers::Contains("does not take the candidate's case"));
}
