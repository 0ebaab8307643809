// assay fuzz: the byte codec is faithful, and a short host campaign finds a
// planted bug and shrinks it, while a correct kernel stays clean.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "case/rng.h"
#include "cli_support.h"
#include "fuzz/case_codec.h"
#include "fuzz/summary.h"
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
  // What the acceptance script reads, without parsing text.
  CHECK(s["time_to_first_failure_s"].get<double>() >= 0);
  CHECK(s["shrink_seconds"].get<double>() >= 0);
  auto f = s["failures"][0];
  for (const char* d : {"m", "n", "k"})
    CHECK(f["smallest_failing_dims"][d].get<int64_t>() <= f["shrunk_dims"][d].get<int64_t>());
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

TEST_CASE("--jobs 2 runs two campaigns on disjoint shards with one merged summary", "[fuzz][cli]") {
  testing::Workdir w;
  auto r = w.run("fuzz " + testing::quote(host_sample("bug_strides.yaml").string()) +
                 " --time 6s --jobs 2 --out out --json all.json");
  INFO(r.output.substr(r.output.size() > 3000 ? r.output.size() - 3000 : 0));
  CHECK(r.code == 1);
  auto s = summary(w, "host_bug_strides");
  CHECK(s["jobs"] == 2);
  REQUIRE(s["per_job"].size() == 2);
  CHECK(s["cases"] == s["per_job"][0]["cases"].get<int64_t>() + s["per_job"][1]["cases"].get<int64_t>());
  CHECK(s["distinct_failures"].get<int>() >= 1);
  CHECK(fs::exists(w.dir / "out/host_bug_strides/job-0/fuzz-summary.json"));
  CHECK(fs::exists(w.dir / "out/host_bug_strides/job-1/fuzz-summary.json"));
  CHECK(fs::is_directory(w.dir / "out/host_bug_strides/fuzz-corpus"));  // shared by both jobs
  std::ifstream in(w.dir / "all.json");
  CHECK(nlohmann::json::parse(in)["kernels"][0]["kernel"] == "host_bug_strides");
}

TEST_CASE("--gpus runs one job per listed GPU", "[fuzz][cli]") {
  testing::Workdir w;
  auto r = w.run("fuzz " + testing::quote(host_sample("naive_f32.yaml").string()) + " --time 2s --gpus 0,1 --out out");
  INFO(r.output);
  CHECK(r.code == 0);
  auto s = summary(w, "host_naive_f32");
  CHECK(s["jobs"] == 2);
  CHECK(s["gpus"] == nlohmann::json({"0", "1"}));
  CHECK(s["distinct_failures"] == 0);
  CHECK(w.run("fuzz " + testing::quote(host_sample("naive_f32.yaml").string()) + " --gpus 0,x").code == 2);
}

TEST_CASE("merged summaries keep what jobs found, even when one died", "[fuzz]") {
  auto job = [](int cases, std::vector<std::pair<std::string, double>> failures) {
    nlohmann::json f = nlohmann::json::array();
    for (auto& [sig, t] : failures) f.push_back({{"signature", sig}, {"seconds", t}, {"shrink_seconds", 0.5}});
    return nlohmann::json{{"kernel", "k"}, {"cases", cases}, {"failures", f}};
  };
  std::vector<fuzz::JobResult> jobs = {{0, 1, job(100, {{"mismatch a", 3.0}, {"mismatch b", 9.0}})},
                                       {1, -9, job(40, {{"mismatch a", 2.0}})},  // killed, summary so far
                                       {2, 3, nullptr}};                          // died before writing any
  auto m = fuzz::merge_summaries(jobs, 10.0);
  CHECK(m["cases"] == 140);
  CHECK(m["cases_per_s"] == 14.0);
  CHECK(m["distinct_failures"] == 2);
  CHECK(m["time_to_first_failure_s"] == 2.0);
  CHECK(m["failures"][0]["job"] == 1);
  CHECK(m["jobs_died"].size() == 2);
}
