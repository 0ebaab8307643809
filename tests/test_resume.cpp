// kill -9 and --resume: a run cut short at any journal line continues to the
// same results as an uninterrupted one, re-running only the in-flight case.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const fs::path kRoot = ASSAY_SOURCE_DIR;
const fs::path kAssay = fs::path(ASSAY_BUILD_DIR) / "assay";

int assay(const std::string& args, const fs::path& cwd) {
  std::string cmd = "cd '" + cwd.string() + "' && '" + kAssay.string() + "' " + args + " > /dev/null 2>&1";
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  return json::parse(in);
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST_CASE("an interrupted run resumes to the uninterrupted run's results", "[resume][cli]") {
  fs::path dir = fs::temp_directory_path() / "assay-test-resume";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string specs = "'" + (kRoot / "generated_kernels/gemm/host/naive_f32.yaml").string() + "' '" +
                            (kRoot / "generated_kernels/gemm/host/bug_tail.yaml").string() + "'";
  const std::string common = " --cases 40 --quiet --cache-dir '" + (dir / "cache").string() + "'";
  REQUIRE(assay("check " + specs + common + " --out full --json full.json", dir) == 1);
  json full = read_json(dir / "full.json");

  // Cut the journal just after a case started: that case was in flight.
  auto lines = lines_of(dir / "full" / "journal.jsonl");
  size_t cut = 0;
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find("\"start\"") != std::string::npos && i > lines.size() / 2) { cut = i + 1; break; }
  REQUIRE(cut > 0);
  fs::create_directories(dir / "cut");
  {
    std::ofstream out(dir / "cut" / "journal.jsonl");
    for (size_t i = 0; i < cut; ++i) out << lines[i] << "\n";
    out << lines[cut].substr(0, lines[cut].size() / 2);  // and a torn last line
  }
  REQUIRE(assay("check --resume cut --json resumed.json", dir) == 1);
  json resumed = read_json(dir / "resumed.json");

  REQUIRE(resumed["kernels"].size() == full["kernels"].size());
  for (size_t i = 0; i < full["kernels"].size(); ++i) {
    const json &a = full["kernels"][i], &b = resumed["kernels"][i];
    INFO(a["name"]);
    CHECK(b["name"] == a["name"]);
    CHECK(b["verdict"] == a["verdict"]);
    CHECK(b["cases_run"] == a["cases_run"]);
    CHECK(b["cases_passed"] == a["cases_passed"]);
    CHECK(b["failures"].size() == a["failures"].size());
  }
  // Every case index of the run is accounted for exactly once in the new journal.
  auto after = lines_of(dir / "cut" / "journal.jsonl");
  // (A batch of small cases may run past a kernel's last reported failure:
  // those cases are journaled, not reported, so ends can outnumber cases_run.)
  std::map<std::pair<std::string, int64_t>, int> starts, ends;
  for (auto& l : after) {
    json j = json::parse(l, nullptr, false);
    if (j.is_discarded()) continue;
    if (j.value("event", "") == "start") ++starts[{j["spec"], j["index"]}];
    if (j.value("event", "") == "end") ++ends[{j["spec"], j["index"]}];
  }
  int64_t total = 0;
  for (auto& k : full["kernels"]) total += k["cases_run"].get<int64_t>();
  CHECK(int64_t(ends.size()) >= total);
  for (auto& [key, n] : ends) CHECK(n == 1);
  for (auto& [key, n] : starts) CHECK(ends.count(key) == 1);
  // The torn line stays a line of its own: the journal can be resumed again.
  int unreadable = 0;
  for (auto& l : after) unreadable += json::parse(l, nullptr, false).is_discarded();
  CHECK(unreadable == 1);
  CHECK(assay("check --resume cut --json again.json", dir) == 1);
  CHECK(read_json(dir / "again.json")["kernels"][0]["cases_run"] == full["kernels"][0]["cases_run"]);
}

TEST_CASE("resume without a journal is bad input", "[resume][cli]") {
  fs::path dir = fs::temp_directory_path() / "assay-test-resume-empty";
  fs::create_directories(dir);
  CHECK(assay("check --resume .", dir) == 2);
}
