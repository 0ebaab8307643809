// assay corpus merge: regression corpora deduplicate by case, fuzz corpora by
// content, or by features through libFuzzer's merge when a spec is given.
#include <catch2/catch.hpp>

#include <fstream>

#include "case/case.h"
#include "cli_support.h"
#include "fuzz/corpus.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "samples_support.h"

using namespace assay;
namespace fs = std::filesystem;

namespace {

Case small_case(int64_t m, uint64_t seed) {
  gemm::Problem c;
  c.m = m, c.n = 2, c.k = 3;
  c.a = gemm::make_layout(c.m, c.k, false), c.b = gemm::make_layout(c.k, c.n, false);
  c.c = gemm::make_layout(c.m, c.n, false);
  c.recipe = Recipe::ints, c.seed = seed;
  return gemm::to_case(c);
}

size_t count_files(const fs::path& dir) {
  size_t n = 0;
  if (fs::is_directory(dir))
    for (auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

}  // namespace

TEST_CASE("corpus merge: case files are deduplicated by case, spec paths stay valid", "[corpus][cli]") {
  testing::Workdir w;
  const fs::path spec = testing::sample_specs(BackendKind::host).front();
  fs::create_directories(w.dir / "one/k1");
  fs::create_directories(w.dir / "two/k1");
  fs::create_directories(w.dir / "two/k2");
  Case a = small_case(4, 1), b = small_case(5, 2);
  std::ofstream(w.dir / "one/k1/case-0000.yaml") << "# mismatch in call 1: x\n# repro: old\n"
                                                 << to_yaml(a, spec, w.dir / "one/k1");
  a.origin = "another origin: the same case";
  std::ofstream(w.dir / "two/k1/other.yaml") << to_yaml(a, spec, w.dir / "two/k1");
  std::ofstream(w.dir / "two/k1/case-0000.yaml") << to_yaml(b);  // same name, other case
  std::ofstream(w.dir / "two/k2/c.yaml") << to_yaml(b);
  auto r = w.run("corpus merge merged one two");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(r.output.find("4 case files, 3 added") != std::string::npos);
  CHECK(count_files(w.dir / "merged/k1") == 2);
  CHECK(count_files(w.dir / "merged/k2") == 1);
  LoadedCase back = load_case_file(w.dir / "merged/k1/case-0000.yaml");
  CHECK(back.spec == spec.lexically_normal());  // rewritten relative to the new folder
  CHECK(w.run("corpus merge merged one two").output.find("0 added") != std::string::npos);
  fs::create_directories(w.dir / "bad/k3");
  w.write("bad/k3/x.yaml", "assay_case: 2\nop: gemm\nsizes: {m: oops}\n");
  CHECK(w.run("corpus merge merged bad").code == 2);
}

TEST_CASE("corpus merge: fuzz inputs by content, and by features with --spec", "[corpus][cli]") {
  testing::Workdir w;
  fs::create_directories(w.dir / "f1");
  fs::create_directories(w.dir / "f2");
  for (int i = 0; i < 6; ++i) {
    std::string bytes(20, char(i * 37 + 1));
    bytes[0] = char(i);
    w.write("f1/in" + std::to_string(i), bytes);
    w.write("f2/copy" + std::to_string(i), bytes);  // the same inputs again
  }
  auto plain = w.run("corpus merge plain f1 f2");
  INFO(plain.output);
  CHECK(plain.code == 0);
  CHECK(count_files(w.dir / "plain") == 6);
  const std::string spec = testing::quote(testing::sample_specs(BackendKind::host).back().string());
  auto r = w.run("corpus merge feat f1 f2 --spec " + spec);
  INFO(r.output);
  CHECK(r.code == 0);
  // libFuzzer keeps the inputs that add features: at least one, never a duplicate.
  CHECK(count_files(w.dir / "feat") >= 1);
  CHECK(count_files(w.dir / "feat") <= 6);
  CHECK(r.output.find("MERGE-OUTER") != std::string::npos);
  fs::create_directories(w.dir / "cases/k");
  w.write("cases/k/c.yaml", to_yaml(small_case(2, 3)));
  CHECK(w.run("corpus merge mixed f1 cases --spec " + spec).code == 2);  // two kinds at once
}

TEST_CASE("corpus merge: a version-1 case file is the same case as its version-2 copy", "[corpus][cli]") {
  testing::Workdir w;
  fs::create_directories(w.dir / "old/k");
  fs::create_directories(w.dir / "new/k");
  // small_case(4, 1) as version 1 wrote it (docs/cases.md, "Version 1 files").
  w.write("old/k/v1.yaml",
          "assay_case: 1\nop: gemm\nm: 4\nn: 2\nk: 3\ndtypes: {a: f32, b: f32, c: f32}\nlayout:\n"
          "  a: {row_stride: 3, col_stride: 1, offset: 0}\n  b: {row_stride: 2, col_stride: 1, offset: 0}\n"
          "  c: {row_stride: 2, col_stride: 1, offset: 0}\nalpha: 1\nbeta: 0\nrecipe: ints\nseed: 1\n");
  CHECK(load_case_file(w.dir / "old/k/v1.yaml").c == small_case(4, 1));
  w.write("new/k/v2.yaml", to_yaml(small_case(4, 1)));
  auto r = w.run("corpus merge merged old new");
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK(r.output.find("2 case files, 1 added") != std::string::npos);
  REQUIRE(count_files(w.dir / "merged/k") == 1);
  for (auto& e : fs::directory_iterator(w.dir / "merged/k")) CHECK(load_case_file(e.path()).c == small_case(4, 1));
}
