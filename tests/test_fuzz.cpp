// assay fuzz: the byte codec is faithful, and a short host campaign finds a
// planted bug and shrinks it, while a correct kernel stays clean.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "case/rng.h"
#include "cli_support.h"
#include "fuzz/case_codec.h"
#include "ops/gemm/gemm_problem.h"
#include "samples_support.h"

using namespace assay;
namespace fs = std::filesystem;

TEST_CASE("fuzz bytes decode to valid cases that encode back to themselves", "[fuzz]") {
  Spec spec;
  fuzz::CodecLimits lim{100};
  for (uint64_t i = 0; i < 2000; ++i) {
    uint8_t bytes[24];
    for (auto& b : bytes) b = uint8_t(mix64(i * 31 + (&b - bytes)));
    Case c = fuzz::decode(bytes, size_t(i % 25), spec, lim);  // short inputs too
    INFO(describe(c));
    CHECK(c.m < 100);
    CHECK(c.n < 100);
    CHECK(c.k < 100);
    auto again = fuzz::encode(c);
    Case d = fuzz::decode(again.data(), again.size(), spec, lim);
    CHECK(d == c);
    Case m = fuzz::mutate(c, mix64(i), lim);
    for (const TensorGeom& g : gemm::tensors(m)) {  // strides still describe non-overlapping rows or columns
      CHECK((g.row_major() || g.col_major() || g.rows <= 1 || g.cols <= 1));
    }
  }
}

namespace {

nlohmann::json summary(const testing::Workdir& w, const std::string& kernel) {
  std::ifstream in(w.dir / "out" / kernel / "fuzz-summary.json");
  return nlohmann::json::parse(in);
}

fs::path host_sample(const std::string& file) {
  for (auto& s : testing::sample_specs(BackendKind::host))
    if (s.filename() == file) return s;
  return {};
}

}  // namespace

TEST_CASE("a 30-second host campaign finds a planted bug and shrinks it", "[fuzz][cli]") {
  testing::Workdir w;
  auto r = w.run("fuzz " + testing::quote(host_sample("bug_strides.yaml").string()) + " --time 30s --out out");
  INFO(r.output.substr(r.output.size() > 3000 ? r.output.size() - 3000 : 0));
  CHECK(r.code == 1);
  auto s = summary(w, "host_bug_strides");
  REQUIRE(s["distinct_failures"].get<int>() >= 1);
  CHECK(s["cases"].get<int64_t>() > 100);
  auto shrunk = load_case_file(w.dir / s["failures"][0]["shrunk_case_file"].get<std::string>());
  // The smallest failing strides case is tiny (two elements of A read from the wrong place).
  CHECK(shrunk.c.m * shrunk.c.n * shrunk.c.k <= 8);
  CHECK(w.run("repro " + testing::quote(s["failures"][0]["shrunk_case_file"].get<std::string>())).code == 1);
}

TEST_CASE("a correct kernel survives a short campaign", "[fuzz][cli]") {
  testing::Workdir w;
  auto r = w.run("fuzz " + testing::quote(host_sample("naive_f32.yaml").string()) + " --time 5s --out out");
  INFO(r.output.substr(r.output.size() > 3000 ? r.output.size() - 3000 : 0));
  CHECK(r.code == 0);
  CHECK(summary(w, "host_naive_f32")["distinct_failures"] == 0);
}

TEST_CASE("fuzz refuses bad durations and shards", "[fuzz][cli]") {
  testing::Workdir w;
  const std::string spec = testing::quote(host_sample("naive_f32.yaml").string());
  CHECK(w.run("fuzz " + spec + " --time soon").code == 2);
  CHECK(w.run("fuzz " + spec + " --time 5s --shard 3/2").code == 2);
}
