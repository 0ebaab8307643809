// assay bench on the GPU: the planted cuda cheats of generated_kernels/bench
// against cuBLAS, and cuBLAS against itself over shapes in a row (two
// workers on one backend: each must be told to unmap what the harness frees).
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>

#include "../samples_support.h"
#include "bench/bench.h"
#include "exec/loader.h"

using namespace assay;
using namespace assay::bench;

namespace {

BenchOptions short_bench(std::vector<BenchShape> shapes) {
  BenchOptions o;
  o.shapes = std::move(shapes);
  o.rule.min_seconds = 0.2, o.rule.min_samples = 10, o.rule.timeout_seconds = 2;
  o.loader.cuda_arch = cuda_arch();
  o.loader.cache_dir = std::filesystem::temp_directory_path() / "assay-gpu-test-kernel-cache";
  o.out_dir = std::filesystem::temp_directory_path() / "assay-gpu-test-bench";
  return o;
}

Spec cublas_f32() {
  for (auto& f : testing::sample_specs(BackendKind::cuda))
    if (f.stem() == "cublas_f32") return load_spec(f);
  FAIL("no cublas_f32 sample");
  return {};
}

}  // namespace

TEST_CASE("cuda bench: each planted cheat gets its verdict and no speedup", "[gpu][bench]") {
  auto backend = make_backend(BackendKind::cuda);
  const Spec baseline = cublas_f32();
  // 4096^3: a fingerprint cache saves far more than a quarter of a call here.
  const BenchShape shape = {{"m", 4096}, {"n", 4096}, {"k", 4096}};
  int planted = 0;
  for (auto& file : testing::sample_specs(BackendKind::cuda, "bench")) {
    const Spec cheat = load_spec(file);
    const BenchReport r = run_bench(cheat, &baseline, *backend, short_bench({shape}));
    REQUIRE(r.shapes.size() == 1);
    INFO(cheat.name << ": " << r.shapes[0].verdict << ": " << r.shapes[0].detail);
    CHECK(r.shapes[0].verdict == cheat.bench_expect);
    CHECK_FALSE(r.shapes[0].speed);
    CHECK(r.shapes[0].baseline.timed());  // cuBLAS itself is no cheat
    ++planted;
  }
  CHECK(planted >= 7);
}

TEST_CASE("cuda bench: cuBLAS against itself is SAME at a large shape and then a small one", "[gpu][bench]") {
  auto backend = make_backend(BackendKind::cuda);
  const Spec cublas = cublas_f32();
  const BenchReport r = run_bench(cublas, &cublas, *backend,
                                  short_bench({{{"m", 4096}, {"n", 4096}, {"k", 4096}}, {{"m", 16}, {"n", 4096}, {"k", 14336}}}));
  REQUIRE(r.shapes.size() == 2);
  for (const ShapeResult& s : r.shapes) {
    INFO(s.shape << ": " << s.verdict << ": " << s.detail);
    CHECK(s.verdict == "SAME");
    REQUIRE(s.speed);
    CHECK(std::fabs(s.speed->speedup - 1.0) < 0.02);
    CHECK(s.candidate.first_sight.size() == size_t(kFirstSightSets));
  }
  CHECK(r.exit_code() == 0);
}

TEST_CASE("cuda bench: a register-tiled GEMM is FASTER than naive, both within the RMS rule at k = 4096", "[gpu][bench]") {
  auto backend = make_backend(BackendKind::cuda);
  std::optional<Spec> naive, regtile;
  for (auto& f : testing::sample_specs(BackendKind::cuda)) {
    if (f.stem() == "naive_f32") naive = load_spec(f);
    if (f.stem() == "regtile_vec_f32") regtile = load_spec(f);
  }
  REQUIRE(naive);
  REQUIRE(regtile);
  const BenchReport r = run_bench(*regtile, &*naive, *backend, short_bench({{{"m", 4096}, {"n", 4096}, {"k", 4096}}}));
  REQUIRE(r.shapes.size() == 1);
  INFO(r.shapes[0].verdict << ": " << r.shapes[0].detail);
  CHECK(r.shapes[0].verdict == "FASTER");  // 10.9x on 2026-12-02
}
