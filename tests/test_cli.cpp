// The `assay` command as CI runs it: exit codes (0 pass, 1 kernel failed,
// 2 bad input, 3 machine cannot), case files that `assay repro` replays,
// .npy dumps, and the JSON and JUnit reports.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "case/case.h"
#include "cli_support.h"
#include "gate/sanitize.h"

namespace fs = std::filesystem;

namespace {

const fs::path kAssay = fs::path(ASSAY_BUILD_DIR) / "assay";
const fs::path kCache = fs::path(ASSAY_BUILD_DIR) / "kernel-cache";
const fs::path kHostSpecs = fs::path(ASSAY_SOURCE_DIR) / "generated_kernels" / "gemm" / "host";

using assay::testing::quote;
using assay::testing::Workdir;
using Result = assay::testing::CliResult;

std::string check_args(const fs::path& spec) {
  return "check " + quote(spec.string()) + " --cases 40 --cache-dir " + quote(kCache.string());
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> case_files(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// A .npy file of format 1.0: magic, header padded to 64 bytes, then data.
struct Npy {
  bool ok = false;
  std::string header;
  size_t data_bytes = 0;
  std::vector<char> data;
};

Npy read_npy(const fs::path& p) {
  Npy n;
  std::string s = slurp(p);
  if (s.size() < 10 || std::memcmp(s.data(), "\x93NUMPY\x01\x00", 8) != 0) return n;
  size_t hlen = size_t(uint8_t(s[8])) | size_t(uint8_t(s[9])) << 8;
  if (s.size() < 10 + hlen || (10 + hlen) % 64 != 0 || s[10 + hlen - 1] != '\n') return n;
  n.header = s.substr(10, hlen);
  n.data_bytes = s.size() - 10 - hlen;
  n.data.assign(s.begin() + long(10 + hlen), s.end());
  n.ok = true;
  return n;
}

}  // namespace

TEST_CASE("cli: a planted bug fails, its case file replays and dumps", "[cli]") {
  REQUIRE(fs::exists(kAssay));
  Workdir w;
  const fs::path spec = kHostSpecs / "bug_tail.yaml";
  Result r = w.run(check_args(spec) + " --out out --json report.json --junit junit.xml");
  INFO(r.output);
  CHECK(r.code == 1);
  auto files = case_files(w.dir / "out");
  REQUIRE_FALSE(files.empty());
  CHECK(files[0].parent_path().filename() == "host_bug_tail");

  SECTION("the JSON and JUnit reports are written and agree") {
    REQUIRE(fs::exists(w.dir / "report.json"));
    auto j = nlohmann::json::parse(slurp(w.dir / "report.json"));
    REQUIRE(j["kernels"].size() == 1);
    CHECK(j["kernels"][0]["name"] == "host_bug_tail");
    CHECK(j["kernels"][0]["verdict"] == "mismatch");
    CHECK(j["kernels"][0]["expect_met"] == true);  // its spec expects mismatch
    REQUIRE(j["kernels"][0]["failures"].size() >= 1);
    auto& f = j["kernels"][0]["failures"][0];
    fs::path cf = f["case_file"].get<std::string>();
    CHECK(fs::exists(cf.is_absolute() ? cf : w.dir / cf));
    CHECK(f["repro"].get<std::string>().rfind("assay repro ", 0) == 0);
    std::string junit = slurp(w.dir / "junit.xml");
    CHECK(junit.rfind("<?xml", 0) == 0);
    CHECK(junit.find("<testcase classname=\"assay.host\" name=\"host_bug_tail\"") != std::string::npos);
  }

  SECTION("repro replays the failure; --dump writes the tensors") {
    assay::LoadedCase lc = assay::load_case_file(files[0]);
    Result rep = w.run("repro " + quote(files[0].string()) + " --cache-dir " + quote(kCache.string()) + " --dump dump");
    INFO(rep.output);
    CHECK(rep.code == 1);
    CHECK(rep.output.find("mismatch") != std::string::npos);
    const int64_t m = lc.c.size("m"), n = lc.c.size("n"), k = lc.c.size("k");
    struct Want {
      const char* file;
      int64_t rows, cols, elem;
      const char* descr;
    };
    for (Want want : {Want{"A.npy", m, k, 4, "<f4"}, Want{"B.npy", k, n, 4, "<f4"}, Want{"C_before.npy", m, n, 4, "<f4"},
                      Want{"C_out.npy", m, n, 4, "<f4"}, Want{"reference.npy", m, n, 8, "<f8"},
                      Want{"bound.npy", m, n, 8, "<f8"}}) {
      INFO(want.file);
      Npy npy = read_npy(w.dir / "dump" / want.file);
      REQUIRE(npy.ok);
      CHECK(npy.data_bytes == size_t(want.rows * want.cols * want.elem));
      CHECK(npy.header.find(std::string("'descr': '") + want.descr + "'") != std::string::npos);
      CHECK(npy.header.find("'shape': (" + std::to_string(want.rows) + ", " + std::to_string(want.cols) + ")") !=
            std::string::npos);
    }
    // the dumped output is the wrong one: it differs from the reference
    Npy out = read_npy(w.dir / "dump" / "C_out.npy"), ref = read_npy(w.dir / "dump" / "reference.npy");
    REQUIRE(out.ok);
    REQUIRE(ref.ok);
    int64_t differ = 0;
    for (int64_t i = 0; i < m * n; ++i) {
      float o;
      double rv;
      std::memcpy(&o, out.data.data() + i * 4, 4);
      std::memcpy(&rv, ref.data.data() + i * 8, 8);
      differ += double(o) != double(float(rv));
    }
    CHECK(differ > 0);
  }

  SECTION("with --expect the planted bug is what the spec expects") {
    Result e = w.run(check_args(spec) + " --out out2 --expect");
    INFO(e.output);
    CHECK(e.code == 0);
  }
}

TEST_CASE("cli: the JUnit report fails a kernel exactly when the exit code does", "[cli]") {
  // Without --expect a planted bug fails the run (exit 1, console FAIL), so
  // CI's JUnit view must show a <failure> too; with --expect it meets its
  // expectation (exit 0) and must not.
  Workdir w;
  const fs::path spec = kHostSpecs / "bug_tail.yaml";
  Result plain = w.run(check_args(spec) + " --out out --junit plain.xml");
  INFO(plain.output);
  REQUIRE(plain.code == 1);
  Result expect = w.run(check_args(spec) + " --out out --junit expect.xml --expect");
  INFO(expect.output);
  REQUIRE(expect.code == 0);
  CHECK(slurp(w.dir / "expect.xml").find("<failure") == std::string::npos);
  CHECK(slurp(w.dir / "plain.xml").find("<failure") != std::string::npos);
}

TEST_CASE("cli: a correct host kernel passes", "[cli]") {
  Workdir w;
  Result r = w.run(check_args(kHostSpecs / "naive_f32.yaml") + " --out out --json r.json --junit j.xml");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(case_files(w.dir / "out").empty());
  auto j = nlohmann::json::parse(slurp(w.dir / "r.json"));
  CHECK(j["kernels"][0]["verdict"] == "pass");
  CHECK(j["kernels"][0]["cases_run"].get<int64_t>() + j["kernels"][0]["cases_skipped"].get<int64_t>() >= 30);
  std::string junit = slurp(w.dir / "j.xml");
  CHECK(junit.find("<testcase") != std::string::npos);
  CHECK(junit.find("<failure") == std::string::npos);
  // a correct kernel does not meet an expectation of failure
  fs::copy_file(kHostSpecs / "naive_f32.cpp", w.dir / "naive_f32.cpp");
  w.write("expects_bug.yaml",
          "name: expects_bug\nbackend: host\nsource: naive_f32.cpp\ndtypes: {a: f32, b: f32, c: f32}\n"
          "compute: f32\nexpect: mismatch\n");
  Result e = w.run(check_args(w.dir / "expects_bug.yaml") + " --out out --expect");
  INFO(e.output);
  CHECK(e.code == 1);
}

TEST_CASE("cli: SIGTERM stops the run, writes the reports with every kernel and exits 143", "[cli][stop]") {
  Workdir w;
  const std::string assay = (fs::path(ASSAY_BUILD_DIR) / "assay").string();
  // Two correct kernels with a long budget: the signal comes while the first
  // (or, on a fast machine, the second) runs, so at least the last is cut short.
  const std::string cmd = "cd " + quote(w.dir.string()) + " && (" + quote(assay) + " check " +
                          quote((kHostSpecs / "naive_f32.yaml").string()) + " " +
                          quote((kHostSpecs / "pairwise_f32.yaml").string()) + " --budget 120 --cache-dir " +
                          quote(kCache.string()) +
                          " --out out --json r.json --junit j.xml > log.txt 2>&1 & p=$!; sleep 4; t0=$(date +%s); "
                          "kill -TERM $p; wait $p; echo \"rc=$? after=$(( $(date +%s) - t0 ))\")";
  Result r = assay::testing::run_command(cmd);
  INFO(r.output << slurp(w.dir / "log.txt"));
  CHECK(r.output.find("rc=143") != std::string::npos);
  const size_t at = r.output.find("after=");
  REQUIRE(at != std::string::npos);
  CHECK(std::stoi(r.output.substr(at + 6)) <= 15);  // the case in flight stops; no budget is waited out
  auto j = nlohmann::json::parse(slurp(w.dir / "r.json"));
  CHECK(j["interrupted"] == "SIGTERM");
  REQUIRE(j["kernels"].size() == 2);
  CHECK(j["kernels"][1]["verdict"] == "interrupted");
  CHECK(j["kernels"][1]["interrupted"] == "SIGTERM");
  CHECK(slurp(w.dir / "j.xml").find("<failure") != std::string::npos);  // an interrupted run is no pass
  CHECK(slurp(w.dir / "log.txt").find("stopped by SIGTERM") != std::string::npos);
}

TEST_CASE("cli: bad input exits 2 and says where", "[cli]") {
  Workdir w;
  fs::copy_file(kHostSpecs / "naive_f32.cpp", w.dir / "k.cpp");
  SECTION("unknown key") {
    w.write("bad.yaml",
            "name: bad\nbackend: host\nsource: k.cpp\ndtypes: {a: f32, b: f32, c: f32}\ncompute: f32\n"
            "colour: red\n");
    Result r = w.run(check_args(w.dir / "bad.yaml"));
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find("bad.yaml:6") != std::string::npos);
    CHECK(r.output.find("colour") != std::string::npos);
  }
  SECTION("missing spec file") {
    Result r = w.run(check_args(w.dir / "nope.yaml"));
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find("nope.yaml") != std::string::npos);
  }
  SECTION("a spec whose source does not compile") {
    w.write("broken.cpp", "this is not C++\n");
    w.write("broken.yaml",
            "name: broken\nbackend: host\nsource: broken.cpp\ndtypes: {a: f32, b: f32, c: f32}\ncompute: f32\n");
    Result r = w.run(check_args(w.dir / "broken.yaml"));
    INFO(r.output);
    CHECK(r.code == 2);
  }
  SECTION("bad input outranks a failing kernel in the same run") {
    w.write("bad.yaml",
            "name: bad\nbackend: host\nsource: k.cpp\ndtypes: {a: f32, b: f32, c: f32}\ncompute: f32\n"
            "colour: red\n");
    Result r = w.run(check_args(kHostSpecs / "bug_oob_write.yaml") + " " + quote((w.dir / "bad.yaml").string()));
    INFO(r.output);
    CHECK(r.code == 2);
  }
  SECTION("bad command line") {
    CHECK(w.run("check --cases -5 x.yaml").code == 2);
    CHECK(w.run("frobnicate").code == 2);
  }
  SECTION("a case file that does not exist") {
    CHECK(w.run("repro missing-case.yaml --cache-dir " + quote(kCache.string())).code == 2);
  }
}

TEST_CASE("cli: a cuda spec on a machine without a GPU exits 3", "[cli]") {
  Workdir w;
  w.write("k.cu", "// never compiled\n");
  w.write("cuda.yaml",
          "name: needs_gpu\nbackend: cuda\nsource: k.cu\ndtypes: {a: f32, b: f32, c: f32}\ncompute: f32\n");
  std::string why;
  if (assay::cuda_available(&why)) {
    WARN("a CUDA GPU is present: the no-GPU exit code is not tested here");
    return;
  }
  Result r = w.run(check_args(w.dir / "cuda.yaml") + " --json r.json");
  INFO(r.output);
  CHECK(r.code == 3);
  auto j = nlohmann::json::parse(slurp(w.dir / "r.json"));
  CHECK(j["kernels"][0]["verdict"] == "infrastructure_error");
  // --backend host leaves it out: nothing to run, nothing failed
  Result h = w.run(check_args(w.dir / "cuda.yaml") + " --backend host");
  INFO(h.output);
  CHECK(h.code == 0);
}

TEST_CASE("cli: planned cases, 16 per exchange, give each kernel the report it gets call by call", "[cli][worker]") {
  // A correct kernel, a planted bug (several failing cases, cut at
  // --max-failures) and a launcher that crashes: planned, 16 cases per
  // exchange with the worker (cuda's default), must report the same
  // verdicts, cases run and failing cases as call by call (the host's).
  Workdir w;
  const fs::path root = fs::path(ASSAY_SOURCE_DIR) / "generated_kernels";
  std::string specs;
  for (auto p : {root / "gemm/host/naive_f32.yaml", root / "gemm/host/bug_tail.yaml",
                 root / "hostile/host/segv_launcher.yaml"})
    specs += " " + quote(p.string());
  const std::string common = "check" + specs + " --cases 60 --max-failures 2 --cache-dir " + quote(kCache.string());
  Result one = w.run(common + " --out one --json one.json");
  Result batched = w.run(common + " --batch 16 --out batched --json batched.json");
  INFO(one.output << "\n---\n" << batched.output);
  CHECK(one.code == 1);
  CHECK(batched.code == one.code);
  auto a = nlohmann::json::parse(slurp(w.dir / "one.json"))["kernels"];
  auto b = nlohmann::json::parse(slurp(w.dir / "batched.json"))["kernels"];
  REQUIRE(a.size() == 3);
  REQUIRE(b.size() == a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i]["name"]);
    CHECK(b[i]["verdict"] == a[i]["verdict"]);
    CHECK(b[i]["cases_run"] == a[i]["cases_run"]);
    CHECK(b[i]["failures"].size() == a[i]["failures"].size());
    for (size_t f = 0; f < a[i]["failures"].size() && f < b[i]["failures"].size(); ++f)
      CHECK(b[i]["failures"][f]["case"] == a[i]["failures"][f]["case"]);
  }
  CHECK(a[1]["verdict"] == "mismatch");
  CHECK(a[2]["verdict"] == "crash");
}

TEST_CASE("cli: --version names assay's own build, and each report carries it wherever it runs", "[cli][version]") {
  Result v = assay::testing::run_command(quote(kAssay.string()) + " --version");
  INFO(v.output);
  CHECK(v.code == 0);
  std::string line = v.output;
  while (!line.empty() && line.back() == '\n') line.pop_back();
  std::smatch m;
  REQUIRE(std::regex_match(
      line, m, std::regex(R"(assay \d+\.\d+ \(commit (\w+)(, clean|, with local changes)?, built \d{4}-\d\d-\d\d\))")));
  const std::string commit = m[1].str();
  CHECK(std::regex_match(commit, std::regex("[0-9a-f]{7,40}|unknown")));
  const std::string commit_field = commit + (m[2].str() == ", with local changes" ? " (with local changes)" : "");

  // Run from inside another repository, with a commit of its own.
  Workdir w;
  Result git = assay::testing::run_command(
      "cd " + quote(w.dir.string()) +
      " && git init -q && git -c user.name=t -c user.email=t@t commit -q --allow-empty -m other && git rev-parse --short HEAD");
  INFO(git.output);
  REQUIRE(git.code == 0);
  std::string other = git.output;
  while (!other.empty() && other.back() == '\n') other.pop_back();
  CHECK(other != commit);

  Result r = w.run(check_args(kHostSpecs / "bug_tail.yaml") + " --out out --json report.json --junit junit.xml");
  INFO(r.output);
  CHECK(r.code == 1);
  auto j = nlohmann::json::parse(slurp(w.dir / "report.json"));
  CHECK(j["build"]["line"] == line);
  CHECK(j["build"]["commit"] == commit);
  CHECK(slurp(w.dir / "junit.xml").find("<property name=\"assay.build\" value=\"" + line + "\"/>") != std::string::npos);

  Result z = w.run("zoo " + quote((kHostSpecs / "bug_tail.yaml").string()) +
                   " --backend host --budget 2 --out results --json zoo.json --markdown zoo.md --cases-out zc "
                   "--cache-dir " + quote(kCache.string()));
  INFO(z.output);
  REQUIRE(fs::exists(w.dir / "zoo.json"));
  auto zj = nlohmann::json::parse(slurp(w.dir / "zoo.json"));
  CHECK(zj["commit"] == commit_field);  // was the other repository's before issue #13
  CHECK(zj["build"]["line"] == line);
  CHECK(slurp(w.dir / "zoo.md").find("- assay: " + line + "\n") != std::string::npos);

  Result f = w.run("fuzz " + quote((kHostSpecs / "naive_f32.yaml").string()) +
                   " --time 1s --out fuzz-out --json fuzz.json --cache-dir " + quote(kCache.string()));
  INFO(f.output);
  REQUIRE(fs::exists(w.dir / "fuzz.json"));
  auto fj = nlohmann::json::parse(slurp(w.dir / "fuzz.json"));
  CHECK(fj["build"]["line"] == line);
  CHECK(fj["kernels"][0]["build"]["line"] == line);
}

TEST_CASE("cli: repro --exact-alloc replays in process, each tensor exactly its own allocation", "[cli][exact]") {
  Workdir w;
  Result r = w.run(check_args(kHostSpecs / "bug_tail.yaml") + " --out out");
  REQUIRE(r.code == 1);
  auto files = case_files(w.dir / "out");
  REQUIRE_FALSE(files.empty());
  const std::string repro = "repro " + quote(files[0].string()) + " --cache-dir " + quote(kCache.string());

  Result bug = w.run(repro + " --exact-alloc");
  INFO(bug.output);
  CHECK(bug.code == 1);
  CHECK(bug.output.find("exact allocations") != std::string::npos);  // says the guard zones are off
  CHECK(bug.output.find("verdict: mismatch") != std::string::npos);
  // The same case, against a correct kernel, passes.
  Result ok = w.run(repro + " --exact-alloc --spec " + quote((kHostSpecs / "naive_f32.yaml").string()));
  INFO(ok.output);
  CHECK(ok.code == 0);
  CHECK(ok.output.find("verdict: pass") != std::string::npos);
  // A worker cannot map exact allocations: asking for both is bad input.
  Result both = w.run(repro + " --exact-alloc --isolation worker");
  INFO(both.output);
  CHECK(both.code == 2);
  CHECK(both.output.find("--exact-alloc") != std::string::npos);

  // The sanitizer replay runs exactly this, under memcheck with padding past each allocation.
  auto argv = assay::sanitizer_command("compute-sanitizer", "memcheck", kAssay, files[0], kCache);
  auto at = [&](const std::string& s) { return std::find(argv.begin(), argv.end(), s); };
  REQUIRE(at("--padding") != argv.end());
  CHECK(*(at("--padding") + 1) == std::to_string(assay::kSanitizerPaddingBytes));
  CHECK(at("--exact-alloc") != argv.end());
  CHECK(at("--isolation") == argv.end());
  CHECK(assay::sanitizer_command("compute-sanitizer", "racecheck", kAssay, files[0], kCache) !=
        argv);  // racecheck takes no memcheck options
  std::string replay;
  for (auto it = at(kAssay.string()); it != argv.end(); ++it) replay += quote(*it) + " ";
  Result sr = assay::testing::run_command("cd " + quote(w.dir.string()) + " && " + replay);
  INFO(sr.output);
  CHECK(sr.code == 1);
  CHECK(sr.output.find("exact allocations") != std::string::npos);
}

// Issue #13's point on the host: the gate sees bug_oob_write's stray store
// in its guard zone; replayed with exact allocations under valgrind, the
// store is past the heap block and valgrind names the kernel's line.
TEST_CASE("cli: an exact replay under valgrind names the host kernel's out-of-bounds write", "[cli][exact][valgrind]") {
  if (assay::testing::run_command("command -v valgrind").code != 0) {
    WARN("valgrind is not installed: the exact replay under valgrind is not tested here");
    return;
  }
  Workdir w;
  Result r = w.run(check_args(kHostSpecs / "bug_oob_write.yaml") + " --max-failures 1 --out out");
  INFO(r.output);
  REQUIRE(r.code == 1);
  auto files = case_files(w.dir / "out");
  REQUIRE_FALSE(files.empty());
  CHECK(files[0].filename().string().find("out_of_bounds_write") != std::string::npos);
  // valgrind also counts the dynamic loader's reads: look for the kernel's store itself.
  const std::regex store(R"(Invalid write of size 4\n==\d+== +at 0x[0-9A-Fa-f]+: assay_run \(bug_oob_write\.cpp:\d+\))");
  auto under_valgrind = [&](const std::string& flags) {
    return assay::testing::run_command("cd " + quote(w.dir.string()) + " && valgrind " + quote(kAssay.string()) +
                                       " repro " + quote(files[0].string()) + " --cache-dir " + quote(kCache.string()) +
                                       " " + flags);
  };
  Result exact = under_valgrind("--exact-alloc");
  INFO(exact.output);
  CHECK(std::regex_search(exact.output, store));
  CHECK(exact.output.find("0 bytes after a block") != std::string::npos);
  // With the gate's guard zones the store stays inside the buffer: assay sees it, valgrind does not.
  Result guarded = under_valgrind("--isolation in-process");
  INFO(guarded.output);
  CHECK(guarded.output.find("verdict: out_of_bounds_write") != std::string::npos);
  CHECK_FALSE(std::regex_search(guarded.output, store));
}
