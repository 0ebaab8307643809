// assay fuzz: the byte codec is faithful, and a short host campaign finds a
// planted bug and shrinks it, while a correct kernel stays clean.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "case/rng.h"
#include "cli_support.h"
#include "fuzz/summary.h"
#include "ops/gemm/gemm_fuzz.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/op.h"
#include "samples_support.h"

using namespace assay;
namespace fs = std::filesystem;

namespace {

// The campaign's path: the op's codec (ops/op.h) on generic cases, read back
// in GEMM's terms.
const Op& gemm_op() { return op_of(Spec{}); }
Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim) {
  const Case c = gemm_op().decode(data, size, spec, lim);
  gemm_op().validate(c);
  return c;
}
std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim = CodecLimits{}) { return gemm_op().encode(c, lim); }
Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) {
  const Case x = gemm_op().mutate(c, random, lim);
  gemm_op().validate(x);
  return x;
}
bool is_huge(const Case& c, const CodecLimits& lim) {
  const bool huge = gemm_op().is_huge(c, lim);
  CHECK(huge == gemm::is_huge_problem(gemm::problem(c), lim));  // the op's rule is GEMM's
  return huge;
}
gemm::Problem P(const Case& c) { return gemm::problem(c); }

}  // namespace

TEST_CASE("fuzz bytes decode to valid cases that encode back to themselves", "[fuzz]") {
  Spec spec;
  CodecLimits lim{100};
  for (uint64_t i = 0; i < 2000; ++i) {
    uint8_t bytes[24];
    for (auto& b : bytes) b = uint8_t(mix64(i * 31 + (&b - bytes)));
    Case c = decode(bytes, size_t(i % 25), spec, lim);  // short inputs too
    INFO(describe(c));
    CHECK(P(c).m < 100);
    CHECK(P(c).n < 100);
    CHECK(P(c).k < 100);
    auto again = encode(c);
    CHECK(again == gemm::encode(P(c)));  // the op encodes as GEMM's codec does
    Case d = decode(again.data(), again.size(), spec, lim);
    CHECK(d == c);
    CHECK(P(d) == gemm::decode(again.data(), again.size(), spec, lim));
    Case m = mutate(c, mix64(i), lim);
    CHECK(P(m) == gemm::mutate(P(c), mix64(i), lim));
    for (const TensorGeom& g : gemm::tensors(P(m))) {  // strides still describe non-overlapping rows or columns
      CHECK((g.row_major() || g.col_major() || g.rows() <= 1 || g.cols() <= 1));
    }
  }
}

namespace {

Case ordinary_case(int64_t m, int64_t n, int64_t k) {
  gemm::Problem c;
  c.m = m, c.n = n, c.k = k;
  c.a = gemm::make_layout(m, k, false), c.b = gemm::make_layout(k, n, false), c.c = gemm::make_layout(m, n, false);
  c.seed = 7, c.origin = "fuzz";  // as decode names it
  return gemm::to_case(c);
}

// The campaign's limits (fuzz/campaign.cpp) on a host and on a GPU with ~110 GB to spare.
CodecLimits host_limits() {
  return {8192, double(1 << 22), double(1 << 17), {BackendKind::host, double(size_t(2) << 30)}, 0};
}
CodecLimits cuda_limits(double budget = 110e9) {
  return {8192, double(1 << 30), double(1 << 22), {BackendKind::cuda, budget}, double(int64_t(1) << 41)};
}
double elements(const Case& x) {
  const gemm::Problem c = P(x);
  return double(c.m) * c.k + double(c.k) * c.n + double(c.m) * c.n;
}
double work(const Case& x) {
  const gemm::Problem c = P(x);
  return double(c.m) * double(c.n) * double(c.k);
}

std::vector<uint8_t> huge_genome(int dim, uint32_t value, uint16_t m, uint16_t n, uint16_t k) {
  std::vector<uint8_t> b(24, 0);
  uint16_t d[3] = {m, n, k};
  std::memcpy(b.data(), d, 6);
  b[20] = uint8_t(0xa0 + dim), b[21] = uint8_t(value), b[22] = uint8_t(value >> 8), b[23] = uint8_t(value >> 16);
  return b;
}

}  // namespace

TEST_CASE("a campaign's seed cases are small, fitted to the spec's requires, and none where nothing fits", "[fuzz]") {
  Spec plain;
  auto seeds = gemm_op().seed_cases(plain);
  REQUIRE(seeds.size() == 6);  // m = n = k in 1, 7, 33; beta 0 and 1
  for (const Case& x : seeds) {
    const gemm::Problem c = P(x);
    CHECK((c.m == c.n && c.n == c.k && c.k <= 33));
  }
  Spec picky;
  for (const char* r : {"k % 8 == 0", "beta == 0"}) picky.requires_.push_back(Requirement::parse(r));
  seeds = gemm_op().seed_cases(picky);
  REQUIRE(!seeds.empty());
  for (const Case& x : seeds) {
    INFO(describe(x));
    const gemm::Problem c = P(x);
    CHECK(c.k % 8 == 0);
    CHECK(c.beta == 0);
  }
  Spec never;
  never.requires_.push_back(Requirement::parse("m < 0"));
  CHECK(gemm_op().seed_cases(never).empty());
}

TEST_CASE("the feedback reaches a two-step window in fewer cases than blind mutation (fuzz lab)", "[fuzz]") {
  // bench/fuzz_lab.cpp: the campaign's codec, mutator and features, no kernel,
  // over a kernel wrong only for m % 128 in 65..127 and k > 4096, which no seed
  // case is near. Counts are exact per seed, but heavy-tailed: over 200 seeds
  // the medians differ 3x (docs/results/2026-11-30-h200-fuzz-feedback.md),
  // over seeds 1-30 only 1.5x, so this asserts "fewer", over 50 seeds.
  const std::string lab = (fs::path(ASSAY_BUILD_DIR) / "assay_fuzz_lab").string();
  auto median_cases = [&](const char* mode) {
    std::vector<int64_t> counts;
    for (int seed = 1; seed <= 50; ++seed) {
      const testing::CliResult r =
          testing::run_command(testing::quote(lab) + " 128 4096 " + mode + " " + std::to_string(seed) + " 200000");
      // The lab's last line: "found after N cases: ..." or "not found in N cases".
      long long n = -1;
      for (const char* said : {"found after ", "not found in "})
        if (size_t at = r.output.find(said); n < 0 && at != std::string::npos)
          std::sscanf(r.output.c_str() + at + std::strlen(said), "%lld", &n);
      REQUIRE(n > 0);
      counts.push_back(n);
    }
    std::sort(counts.begin(), counts.end());
    return counts[counts.size() / 2];
  };
  const int64_t with = median_cases("with"), without = median_cases("without");
  INFO("median cases to the window: " << with << " with feedback, " << without << " without");
  CHECK(with < without);
}

TEST_CASE("the fuzz lab refuses bad arguments with its usage and exit 2", "[fuzz]") {
  const std::string lab = testing::quote((fs::path(ASSAY_BUILD_DIR) / "assay_fuzz_lab").string());
  for (const char* args : {"", "0 4096 with 1", "128 x with 1", "128 4096 maybe 1", "128 4096 with 1 0"}) {
    INFO(args);
    const testing::CliResult r = testing::run_command(lab + " " + args);
    CHECK(r.code == 2);
    CHECK(r.output.find("usage:") != std::string::npos);
  }
}

TEST_CASE("ordinary fuzz cases: k grows past 2048 in steps, m*n*k and the elements stay bounded", "[fuzz]") {
  Spec spec;
  const auto lim = host_limits();
  bool doubled_past_2048 = false;
  for (uint64_t i = 0; i < 20000; ++i) {
    uint8_t bytes[24];
    for (auto& b : bytes) b = uint8_t(mix64(i * 17 + (&b - bytes)));
    if (i % 2) bytes[20] = uint8_t(0xa0 + i % 3);  // a huge tag: the host ignores it
    Case c = decode(bytes, sizeof bytes, spec, lim);
    INFO(describe(c));
    CHECK(!is_huge(c, lim));
    CHECK(work(c) <= lim.max_work);
    CHECK(elements(c) <= lim.max_elements);
    Case from = ordinary_case(33, 3, 1025);
    Case mx = mutate(from, mix64(i), lim);
    const gemm::Problem x = P(mx);
    CHECK(!is_huge(mx, lim));  // the host never gets a huge case
    CHECK(work(mx) <= lim.max_work);
    CHECK(elements(mx) <= lim.max_elements);
    doubled_past_2048 |= x.k > 2048 && x.m == 33;
    const gemm::Problem back = P(decode(encode(mx, lim).data(), encode(mx, lim).size(), spec, lim));
    CHECK(back.m == x.m);
    CHECK(back.n == x.n);
    CHECK(back.k == x.k);
  }
  CHECK(doubled_past_2048);
  // Past the work bound, a move keeps the dimension it set; another gives way.
  Case big = ordinary_case(160, 160, 160);
  for (uint64_t i = 0; i < 2000; ++i) {
    const gemm::Problem x = P(mutate(big, mix64(i), lim));
    if (x.k == 2 * 160 + 1) CHECK(x.m * x.n * x.k <= int64_t(1) << 22);
  }
}

TEST_CASE("the huge extension: old 20-byte inputs decode as before, huge ones only on cuda within budget", "[fuzz]") {
  Spec spec;
  for (const char* t : {"a", "b", "c"}) spec.set_dtype(t, DType::f32);
  const int64_t huge = (int64_t(1) << 20) + 7;
  auto g = huge_genome(0, uint32_t(huge), 100, 3, 2051);
  SECTION("a 20-byte input ignores the extension") {
    const gemm::Problem c = P(decode(g.data(), 20, spec, cuda_limits()));
    CHECK(c.m == 100);
    CHECK(c.n == 3);
    CHECK(c.k == 2051);
  }
  SECTION("cuda: m = 2^20 + 7 with k = 2051, A past 2^31 elements") {
    const auto lim = cuda_limits();
    Case x = decode(g.data(), g.size(), spec, lim);
    const gemm::Problem c = P(x);
    CHECK(c.m == huge);
    CHECK(c.n == 3);
    CHECK(c.k == 2051);
    CHECK(is_huge(x, lim));
    auto again = encode(x, lim);
    CHECK(again.size() == 24);
    CHECK(decode(again.data(), again.size(), spec, lim) == x);
  }
  SECTION("no huge case past the memory budget, nor on the host") {
    for (const auto& lim : {cuda_limits(1e9), host_limits()}) {
      Case c = decode(g.data(), g.size(), spec, lim);
      CHECK(P(c).m < 8192);
      CHECK(!is_huge(c, lim));
    }
  }
  SECTION("a huge value past 2^24 or a bad tag is no huge case") {
    auto bad = huge_genome(0, uint32_t(huge), 100, 3, 2051);
    bad[20] = 0xa3;
    CHECK(P(decode(bad.data(), bad.size(), spec, cuda_limits())).m == 100);
  }
}

TEST_CASE("the huge move: rare, cuda only, within budget, reaching 2^20 rows and 2^31 elements", "[fuzz]") {
  Spec spec;
  for (const char* t : {"a", "b", "c"}) spec.set_dtype(t, DType::f32);
  const auto lim = cuda_limits();
  const Case from = ordinary_case(37, 45, 29);
  int huge_cases = 0, rows_past_2_20 = 0, past_2_31 = 0;
  const int tries = 64000;
  for (int i = 0; i < tries; ++i) {
    const Case mx = mutate(from, mix64(uint64_t(i)), lim);
    if (!is_huge(mx, lim)) {
      CHECK(work(mx) <= lim.max_work);
      CHECK(elements(mx) <= lim.max_elements);
      continue;
    }
    ++huge_cases;
    INFO(describe(mx));
    const gemm::Problem x = P(mx);
    int big = 0;
    for (int64_t d : {x.m, x.n, x.k}) big += d >= lim.max_dim;
    CHECK(big == 1);  // one dimension huge, the others ordinary
    CHECK(gemm::huge_case_fits(x, lim.huge));
    CHECK(gemm_op().huge_case_fits(mx, lim.huge));
    rows_past_2_20 += x.m > (int64_t(1) << 20) - 16;
    const double most = std::max({double(x.m) * x.k, double(x.k) * x.n, double(x.m) * x.n});
    past_2_31 += most > double(int64_t(1) << 31);
    auto bytes = encode(mx, lim);
    CHECK(decode(bytes.data(), bytes.size(), spec, lim) == mx);
    // Moves from a huge case stay valid: huge in the same dimension, or ordinary again.
    for (uint64_t j = 0; j < 8; ++j) {
      const gemm::Problem y = P(mutate(mx, mix64(j + 99), lim));
      int ybig = 0;
      for (int64_t d : {y.m, y.n, y.k}) ybig += d >= lim.max_dim;
      CHECK(ybig <= 1);
      if (ybig) CHECK(gemm::huge_case_fits(y, lim.huge));
    }
  }
  CHECK(huge_cases > tries / 200);  // about 1 in 64
  CHECK(huge_cases < tries / 30);
  CHECK(rows_past_2_20 > huge_cases / 8);
  CHECK(past_2_31 > huge_cases / 8);
  // A budget too small for any huge case: the move gives way to an ordinary one.
  for (int i = 0; i < 5000; ++i) CHECK(!is_huge(mutate(from, mix64(uint64_t(i)), cuda_limits(1e6)), lim));
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
  const gemm::Problem shrunk =
      gemm::problem(load_case_file(w.dir / s["failures"][0]["shrunk_case_file"].get<std::string>()).c);
  // The smallest failing strides case is tiny (two elements of A read from the wrong place).
  CHECK(shrunk.m * shrunk.n * shrunk.k <= 8);
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

TEST_CASE("a campaign its scheduler ends with SIGTERM or SIGKILL leaves a recent summary", "[fuzz][cli]") {
  // The signal goes to `assay fuzz` alone; its campaign process must end too
  // (its summary then stops changing).
  for (const char* sig : {"TERM", "KILL"}) {
    testing::Workdir w;
    auto r = w.run("fuzz " + testing::quote(host_sample("naive_f32.yaml").string()) +
                   " --time 120s --out out > log 2>&1 & p=$!; sleep 8; kill -" + sig + " $p; wait $p; sleep 1; cp " +
                   testing::quote((w.dir / "out/host_naive_f32/fuzz-summary.json").string()) + " " +
                   testing::quote((w.dir / "then.json").string()) + "; sleep 6; true");
    INFO(sig << ": " << r.output);
    auto s = summary(w, "host_naive_f32");  // at most a few seconds old
    CHECK(s["finished"] == false);
    CHECK(s["cases"].get<int64_t>() > 0);
    CHECK(s["seconds"].get<double>() > 2);
    CHECK(s["distinct_failures"] == 0);
    std::ifstream then(w.dir / "then.json");
    CHECK(nlohmann::json::parse(then) == s);
  }
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
  jobs[0].summary["unfinished_case"] = {{"case_file", "out/k/job-0/case-0100-unfinished-fuzz.yaml"}};
  jobs[1].summary["unfinished_case"] = nullptr;
  jobs[1].summary["stopped"] = "over its host memory limit";
  auto m = fuzz::merge_summaries(jobs, 10.0);
  REQUIRE(m["unfinished_cases"].size() == 1);
  CHECK(m["unfinished_cases"][0]["job"] == 0);
  CHECK(m["unfinished_cases"][0]["case_file"] == "out/k/job-0/case-0100-unfinished-fuzz.yaml");
  REQUIRE(m["stopped"].size() == 1);
  CHECK(m["stopped"][0]["job"] == 1);
  CHECK(m["cases"] == 140);
  CHECK(m["cases_per_s"] == 14.0);
  CHECK(m["distinct_failures"] == 2);
  CHECK(m["time_to_first_failure_s"] == 2.0);
  CHECK(m["failures"][0]["job"] == 1);
  CHECK(m["jobs_died"].size() == 2);
}
