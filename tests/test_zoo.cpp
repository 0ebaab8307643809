// `assay zoo`: one kernel through the gate and the baselines, classified per
// checker; the command writes its table and exits by assay's own record.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "baseline/zoo.h"
#include "cli_support.h"
#include "samples_support.h"

using namespace assay;
using namespace assay::baseline;
namespace fs = std::filesystem;

namespace {

fs::path host_sample(const std::string& stem) {
  return testing::source_root() / "generated_kernels/gemm/host" / (stem + ".yaml");
}

ZooRow zoo_row(const std::string& stem) {
  auto backend = make_backend(BackendKind::host);
  GateOptions opt = testing::sample_gate_options(150);
  opt.shrink_attempts = 0;
  return run_zoo_kernel(load_spec(host_sample(stem)), *backend, opt);
}

std::string slurp(const fs::path& f) {
  std::ifstream in(f);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("zoo: assay catches the stale-result kernel that KernelBench passes", "[zoo]") {
  ZooRow row = zoo_row("bug_stale");
  REQUIRE(row.cells.size() == kZooCheckers.size());
  CHECK(row.planted);
  INFO(row.cells[0].detail);
  CHECK(row.cells[0].status == "caught");
  CHECK(row.cells[0].verdict == "stale_result");
  CHECK(row.cells[0].seconds > 0);
  CHECK(row.cells[1].status == "missed");  // kernelbench
}

TEST_CASE("zoo: a correct kernel is a pass for every checker", "[zoo]") {
  ZooRow row = zoo_row("naive_f64");
  CHECK_FALSE(row.planted);
  REQUIRE(row.cells.size() == kZooCheckers.size());
  for (size_t j = 0; j < row.cells.size(); ++j) {
    INFO(kZooCheckers[j] << ": " << row.cells[j].detail);
    if (kZooCheckers[j] == "deepgemm") {  // DeepGEMM's rule is fp8_gemm's: n/a for a GEMM, with no note
      CHECK(row.cells[j].status == "n/a");
      CHECK(row.cells[j].detail.empty());
      continue;
    }
    CHECK(row.cells[j].status == "pass");
    CHECK(row.cells[j].cases > 0);
  }
}

TEST_CASE("zoo: a correct f32 kernel passes all but assert_close's k = 128 shape", "[zoo]") {
  ZooRow row = zoo_row("naive_f32");
  for (size_t j = 0; j < 3; ++j) {
    INFO(kZooCheckers[j] << ": " << row.cells[j].detail);
    CHECK(row.cells[j].status == "pass");
  }
  // The rule's own noise (docs/baselines.md): a false alarm only at its largest shape.
  if (row.cells[3].status != "pass") CHECK(row.cells[3].failed_case.starts_with("shape 256x512x128"));
}

TEST_CASE("zoo: totals count detections, false alarms and the median time", "[zoo]") {
  auto cell = [](std::string s, double t) { return ZooCell{s, "", t, 1, ""}; };
  std::vector<ZooRow> rows(3);
  rows[0].planted = rows[1].planted = true;
  rows[0].cells = {cell("caught", 1), cell("missed", 0), cell("n/a", 0), cell("caught", 3)};
  rows[1].cells = {cell("caught", 3), cell("caught", 2), cell("n/a", 0), cell("caught", 5)};
  rows[2].cells = {cell("pass", 9), cell("false alarm", 1), cell("pass", 0), cell("error", 0), cell("pass", 2)};
  auto t = zoo_totals(rows);  // rows 0 and 1 have no deepgemm cell (older reports): n/a
  CHECK(t[0].caught == 2);
  CHECK(t[0].planted == 2);
  CHECK(t[0].median_detect_s == Approx(2.0));
  CHECK(t[1].false_alarms == 1);
  CHECK(t[1].correct == 1);
  CHECK(t[2].not_applicable == 2);
  CHECK(t[2].planted == 0);
  CHECK(t[3].errors == 1);
  REQUIRE(t.size() == 5);
  CHECK(t[4].not_applicable == 2);
  CHECK(t[4].correct == 1);
  CHECK(zoo_console(rows, t).find("FALSE ALARM") != std::string::npos);
}

TEST_CASE("zoo: totals per op family, each with its own median time to the first failure", "[zoo]") {
  auto cell = [](std::string s, double t) { return ZooCell{s, "", t, 1, ""}; };
  std::vector<ZooRow> rows(4);
  rows[0].family = rows[1].family = "softmax", rows[2].family = rows[3].family = "reduce";
  rows[0].planted = rows[2].planted = rows[3].planted = true;
  rows[0].cells = {cell("caught", 4), cell("missed", 0), cell("missed", 0), cell("missed", 0)};
  rows[1].cells = {cell("pass", 9), cell("pass", 1), cell("pass", 1), cell("false alarm", 1)};
  rows[2].cells = {cell("caught", 1), cell("caught", 2), cell("missed", 0), cell("missed", 0)};
  rows[3].cells = {cell("caught", 3), cell("missed", 0), cell("missed", 0), cell("caught", 1)};
  const auto f = zoo_family_totals(rows);
  REQUIRE(f.size() == 2);
  CHECK(f[0].family == "softmax");
  CHECK(f[0].kernels == 2);
  CHECK(f[0].checkers[0].median_detect_s == Approx(4.0));
  CHECK(f[0].checkers[3].false_alarms == 1);
  CHECK(f[1].family == "reduce");
  CHECK(f[1].checkers[0].caught == 2);
  CHECK(f[1].checkers[0].median_detect_s == Approx(2.0));
  CHECK(f[1].checkers[1].caught == 1);
  const std::string text = zoo_family_console(f);
  CHECK(text.find("reduce") != std::string::npos);
  CHECK(text.find("2/2 (100%)") != std::string::npos);
  CHECK(zoo_markdown(rows, zoo_totals(rows), ZooMeta{}).find("## Per op family") != std::string::npos);
}

TEST_CASE("assay zoo writes the table and exits 0 when assay caught every planted kernel", "[zoo][cli]") {
  testing::Workdir w;
  const std::string specs = testing::quote(host_sample("bug_stale").string()) + " " +
                            testing::quote(host_sample("bug_tail").string());
  auto r = w.run("zoo " + specs + " --backend host --budget 10 --out results --json z.json --cases-out cases");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(r.output.find("host_bug_stale") != std::string::npos);
  auto j = nlohmann::json::parse(slurp(w.dir / "z.json"));
  CHECK(j["backend"] == "host");
  CHECK(j["device"] == "host");
  REQUIRE(j["kernels"].size() == 2);
  CHECK(j["kernels"][0]["checkers"]["assay"]["status"] == "caught");
  CHECK(j["kernels"][0]["family"] == "gemm");
  REQUIRE(j["families"].size() == 1);
  CHECK(j["families"][0]["family"] == "gemm");
  bool markdown = false;
  for (auto& e : fs::directory_iterator(w.dir / "results")) markdown |= e.path().extension() == ".md";
  CHECK(markdown);
}

TEST_CASE("assay zoo exits 1 when assay misses a planted kernel", "[zoo][cli]") {
  testing::Workdir w;
  // A correct kernel that claims to be a planted bug: assay (rightly) passes it.
  const std::string src = host_sample("naive_f32").parent_path().string() + "/naive_f32.cpp";
  w.write("k.cpp", slurp(src));
  w.write("k.yaml", "name: fake_bug\nbackend: host\nsource: k.cpp\ndtypes: {a: f32, b: f32, c: f32}\n"
                    "compute: f32\nexpect: mismatch\n");
  auto r = w.run("zoo k.yaml --backend host --budget 3 --out results --cases-out cases");
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK(r.output.find("missed") != std::string::npos);
}

TEST_CASE("a zoo stopped by SIGTERM keeps the kernels it finished, marked partial", "[zoo][cli]") {
  testing::Workdir w;
  const std::string specs = testing::quote(host_sample("bug_stale").string()) + " " +
                            testing::quote(host_sample("naive_f32").string());
  // The second kernel (correct: it runs its whole budget) is in flight when
  // the signal comes, once the first kernel's row is on disk.
  const std::string zoo = testing::quote((fs::path(ASSAY_BUILD_DIR) / "assay").string()) + " zoo " + specs +
                          " --backend host --budget 60 --out results --json z.json --cases-out cases";
  auto r = testing::run_command("cd " + testing::quote(w.dir.string()) + " && (" + zoo +
                                " & pid=$!; for i in $(seq 600); do [ -f z.json ] && break; sleep 0.1; done; "
                                "sleep 0.5; kill -TERM $pid; wait $pid)");
  INFO(r.output);
  CHECK(r.code == 128 + 15);
  auto j = nlohmann::json::parse(slurp(w.dir / "z.json"));
  REQUIRE(j["kernels"].size() == 1);
  CHECK(j["kernels"][0]["name"] == "host_bug_stale");
  CHECK(j["kernels"][0]["checkers"]["assay"]["status"] == "caught");
  CHECK(j["note"].get<std::string>().find("stopped by SIGTERM") != std::string::npos);
}
