// Bad input through the whole command: a clear message and exit code 2,
// never a crash of the harness.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace std::string_literals;
namespace fs = std::filesystem;

namespace {

struct Result {
  int code;
  std::string output;
};

Result assay(const std::string& args, const fs::path& cwd) {
  std::string cmd = "cd '" + cwd.string() + "' && '" + std::string(ASSAY_BUILD_DIR) + "/assay' " + args + " 2>&1";
  Result r{-1, {}};
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

fs::path scratch() {
  fs::path dir = fs::temp_directory_path() / "assay-test-bad-input";
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

const std::string kCase = R"(assay_case: 1
op: gemm
m: M
n: 4
k: 4
dtypes: {a: f32, b: f32, c: f32}
layout:
  a: {row_stride: 4, col_stride: 1, offset: 0}
  b: {row_stride: 4, col_stride: 1, offset: 0}
  c: {row_stride: 4, col_stride: 1, offset: 0}
alpha: 1
beta: 0
recipe: uniform
seed: 1
)";

std::string case_with_m(const std::string& m) {
  std::string s = kCase;
  s.replace(s.find("M"), 1, m);
  return s;
}

std::string spec_text(const std::string& source) {
  return "name: t\nop: gemm\nbackend: host\nsource: " + source +
         "\ndtypes: {a: f32, b: f32, c: f32}\ncompute: f32\n";
}

}  // namespace

TEST_CASE("hostile case files are refused with exit 2", "[bad_input][cli]") {
  fs::path dir = scratch();
  write(dir / "k.cpp", "#include <assay/abi.h>\nextern \"C\" int assay_run(const assay_call*) { return 0; }\n");
  write(dir / "spec.yaml", spec_text("k.cpp"));
  const std::string spec = " --spec spec.yaml";
  for (std::string m : {"-3"s, "99999999999999999999"s, "1e300"s, "4294967296"s, "[1, 2]"s}) {
    write(dir / "case.yaml", case_with_m(m));
    Result r = assay("repro case.yaml" + spec, dir);
    INFO("m: " << m << "\n" << r.output);
    CHECK(r.code == 2);
  }
  write(dir / "nul.yaml", case_with_m("4").insert(10, 1, '\0'));
  CHECK(assay("repro nul.yaml" + spec, dir).code == 2);
  write(dir / "alias.yaml", "a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: &c [*b, *b, *b]\nassay_case: *c\n");
  CHECK(assay("repro alias.yaml" + spec, dir).code == 2);
  // Inside the parser's limits, but far more memory than the host backend takes.
  write(dir / "huge.yaml", [] {
    std::string s = case_with_m("1048576");
    for (auto key : {"n: 4", "k: 4"}) s.replace(s.find(key), 4, std::string(key).substr(0, 3) + "1048576");
    for (size_t at = 0; (at = s.find("row_stride: 4", at)) != std::string::npos;) s.replace(at, 13, "row_stride: 1048576");
    return s;
  }());
  Result huge = assay("repro huge.yaml" + spec, dir);
  INFO(huge.output);
  CHECK(huge.code == 2);
  CHECK(huge.output.find("more than the host backend takes") != std::string::npos);
}

TEST_CASE("compiler errors are shown verbatim, exit 2", "[bad_input][cli]") {
  fs::path dir = scratch();
  write(dir / "broken.cpp", "#include <assay/abi.h>\nextern \"C\" int assay_run(const assay_call*) { return oops_undeclared; }\n");
  write(dir / "broken.yaml", spec_text("broken.cpp"));
  Result r = assay("check broken.yaml --cases 3 --quiet --out out", dir);
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("oops_undeclared") != std::string::npos);
}

TEST_CASE("a kernel library without its entry is a set-up error in the worker too", "[bad_input][cli]") {
  fs::path dir = scratch();
  write(dir / "noentry.cpp", "extern \"C\" int something_else() { return 0; }\n");
  write(dir / "noentry.yaml", spec_text("noentry.cpp"));
  Result r = assay("check noentry.yaml --cases 3 --quiet --out out", dir);
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("assay_run") != std::string::npos);
}
