// Bad input through the whole command: a clear message and exit code 2,
// never a crash of the harness.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "backend/host/host_backend.h"
#include "cli_support.h"
#include "core/error.h"

using namespace std::string_literals;
namespace fs = std::filesystem;

namespace {

using assay::testing::CliResult;
using assay::testing::Workdir;

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
  Workdir w;
  w.write("k.cpp", "#include <assay/abi.h>\nextern \"C\" int assay_run(const assay_call*) { return 0; }\n");
  w.write("spec.yaml", spec_text("k.cpp"));
  const std::string spec = " --spec spec.yaml";
  for (std::string m : {"-3"s, "99999999999999999999"s, "1e300"s, "4294967296"s, "[1, 2]"s}) {
    w.write("case.yaml", case_with_m(m));
    CliResult r = w.run("repro case.yaml" + spec);
    INFO("m: " << m << "\n" << r.output);
    CHECK(r.code == 2);
  }
  w.write("nul.yaml", case_with_m("4").insert(10, 1, '\0'));
  CHECK(w.run("repro nul.yaml" + spec).code == 2);
  w.write("alias.yaml", "a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: &c [*b, *b, *b]\nassay_case: *c\n");
  CHECK(w.run("repro alias.yaml" + spec).code == 2);
  // Inside the parser's limits, but far more memory than the host backend takes.
  w.write("huge.yaml", [] {
    std::string s = case_with_m("1048576");
    for (auto key : {"n: 4", "k: 4"}) s.replace(s.find(key), 4, std::string(key).substr(0, 3) + "1048576");
    for (size_t at = 0; (at = s.find("row_stride: 4", at)) != std::string::npos;) s.replace(at, 13, "row_stride: 1048576");
    return s;
  }());
  CliResult huge = w.run("repro huge.yaml" + spec);
  INFO(huge.output);
  CHECK(huge.code == 2);
  CHECK(huge.output.find("more than the host backend takes") != std::string::npos);
}

TEST_CASE("compiler errors are shown verbatim, exit 2", "[bad_input][cli]") {
  Workdir w;
  w.write("broken.cpp", "#include <assay/abi.h>\nextern \"C\" int assay_run(const assay_call*) { return oops_undeclared; }\n");
  w.write("broken.yaml", spec_text("broken.cpp"));
  CliResult r = w.run("check broken.yaml --cases 3 --quiet --out out");
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("oops_undeclared") != std::string::npos);
}

TEST_CASE("a kernel library without its entry is a set-up error in the worker too", "[bad_input][cli]") {
  Workdir w;
  w.write("noentry.cpp", "extern \"C\" int something_else() { return 0; }\n");
  w.write("noentry.yaml", spec_text("noentry.cpp"));
  CliResult r = w.run("check noentry.yaml --cases 3 --quiet --out out");
  INFO(r.output);
  CHECK(r.code == 2);
  CHECK(r.output.find("assay_run") != std::string::npos);
}

TEST_CASE("a buffer larger than the machine is an OutOfMemory error, which a gate waits for", "[bad_input]") {
  assay::HostBackend host;
  // 2^60 bytes: no machine has it; the mapping or the memfd refuses it.
  REQUIRE_THROWS_AS(host.allocate(size_t(1) << 60), assay::OutOfMemory);
}
