// Case files: exact round trips (full 64-bit seeds, doubles to the last bit),
// the repro line, and an error naming line and key for every malformed field.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>

#include "case/case.h"
#include "core/error.h"

namespace fs = std::filesystem;
using assay::Case;
using assay::DType;
using assay::InputError;

namespace {

Case example_case() {
  Case c;
  c.m = 3, c.n = 65, c.k = 8;
  c.a_type = DType::f16, c.b_type = DType::f16, c.c_type = DType::f32;
  c.a = {8, 1, 1};
  c.b = {1, 9, 0};
  c.c = {65, 1, 0};
  c.alpha = 1, c.beta = 0;
  c.recipe = assay::Recipe::ints;
  c.seed = 12345678901234567890ull;
  c.origin = "boundary m=tile-1";
  return c;
}

// The example written out; the error tests below edit it line by line.
const std::string kExample =
    "assay_case: 1\n"                                      // 1
    "op: gemm\n"                                           // 2
    "m: 3\n"                                               // 3
    "n: 65\n"                                              // 4
    "k: 8\n"                                               // 5
    "dtypes: {a: f16, b: f16, c: f32}\n"                   // 6
    "layout:\n"                                            // 7
    "  a: {row_stride: 8, col_stride: 1, offset: 1}\n"     // 8
    "  b: {row_stride: 1, col_stride: 9, offset: 0}\n"     // 9
    "  c: {row_stride: 65, col_stride: 1, offset: 0}\n"    // 10
    "alpha: 1\n"                                           // 11
    "beta: 0\n"                                            // 12
    "recipe: ints\n"                                       // 13
    "seed: 12345678901234567890\n"                         // 14
    "origin: \"boundary m=tile-1\"\n";                     // 15

// kExample with line `line` (1-based) replaced by `replacement`.
std::string with_line(int line, const std::string& replacement) {
  std::string out;
  size_t start = 0;
  for (int i = 1; start < kExample.size(); ++i) {
    size_t end = kExample.find('\n', start) + 1;
    out += i == line ? replacement + "\n" : kExample.substr(start, end - start);
    start = end;
  }
  return out;
}

std::string error_of(const std::string& yaml) {
  try {
    assay::parse_case_yaml(yaml, "case.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string at(int line, const std::string& key) {
  return "case.yaml:" + std::to_string(line) + ": key '" + key + "'";
}

bool same_bits(double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; }

struct TempDir {
  fs::path dir;
  TempDir() {
    std::random_device rd;
    dir = fs::temp_directory_path() / ("assay_test_case_" + std::to_string(rd()));
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

// A random but valid case, leaning on boundary values.
Case random_case(std::mt19937_64& rng) {
  auto pick = [&](std::initializer_list<int64_t> edges, int64_t hi) {
    return rng() % 2 ? edges.begin()[rng() % edges.size()] : int64_t(rng() % uint64_t(hi + 1));
  };
  const int64_t dim_max = int64_t(1) << 31, ext_max = int64_t(1) << 40;
  auto layout = [&]() {
    return assay::Layout{pick({0, 1, 65, ext_max}, 1 << 20), pick({0, 1, ext_max}, 1 << 20),
                         pick({0, 1, ext_max}, ext_max)};
  };
  static const double odd[] = {0.7, 1.3, -0.0, 0.1, 1.0 / 3.0, -2.5e-8, 1e300, 5e-324,
                               std::numeric_limits<double>::max(), -std::numeric_limits<double>::min(),
                               123456789.123456789, 9007199254740993.0};
  auto scalar = [&]() {
    if (rng() % 2) return odd[rng() % std::size(odd)];
    double d;
    do {
      uint64_t bits = rng();
      std::memcpy(&d, &bits, sizeof d);
    } while (!std::isfinite(d));
    return d;
  };
  const DType types[] = {DType::f64, DType::f32, DType::f16, DType::bf16};
  Case c;
  c.m = pick({0, 1, dim_max}, 4096), c.n = pick({0, 1, dim_max}, 4096), c.k = pick({0, 1, dim_max}, 4096);
  c.a_type = types[rng() % 4], c.b_type = types[rng() % 4], c.c_type = types[rng() % 4];
  c.a = layout(), c.b = layout(), c.c = layout();
  c.alpha = scalar(), c.beta = scalar();
  c.recipe = assay::Recipe(rng() % 4);
  c.seed = rng() % 3 ? rng() : (rng() % 2 ? 0 : std::numeric_limits<uint64_t>::max());
  const std::string chars = "abc XYZ019=-+:#,[]{}&*!|>'\"\\%@`\t\n\r\x01\x7f\xc3\xa9";
  for (int i = 0, n = int(rng() % 30); i < n; ++i) c.origin += chars[rng() % chars.size()];
  return c;
}

}  // namespace

TEST_CASE("case: the example reads back field by field", "[case]") {
  assay::LoadedCase lc = assay::parse_case_yaml(kExample, "case.yaml");
  CHECK(lc.c == example_case());
  CHECK(lc.spec.empty());
}

TEST_CASE("case: to_yaml writes the documented layout", "[case]") {
  CHECK(assay::to_yaml(example_case()) == kExample);
  Case c = example_case();
  c.origin.clear();  // no origin, no line
  CHECK(assay::to_yaml(c) == kExample.substr(0, kExample.find("origin:")));
  c.alpha = 0.7, c.beta = -1.3;
  CHECK_THAT(assay::to_yaml(c), Catch::Contains("alpha: 0.7\nbeta: -1.3\n"));
}

TEST_CASE("case: describe is one line", "[case]") {
  CHECK(assay::describe(example_case()) ==
        "gemm m=3 n=65 k=8 A=f16[8,1]+1 B=f16[1,9] C=f32[65,1] alpha=1 beta=0 ints seed=12345678901234567890");
  Case c = example_case();
  c.alpha = 0.7, c.recipe = assay::Recipe::specials, c.seed = 7, c.c_type = DType::bf16;
  CHECK(assay::describe(c) ==
        "gemm m=3 n=65 k=8 A=f16[8,1]+1 B=f16[1,9] C=bf16[65,1] alpha=0.7 beta=0 specials seed=7");
}

TEST_CASE("case: random cases round-trip exactly", "[case]") {
  std::mt19937_64 rng(2024);
  for (int i = 0; i < 2000; ++i) {
    Case c = random_case(rng);
    std::string yaml = assay::to_yaml(c);
    Case back;
    try {
      back = assay::parse_case_yaml(yaml, "rt.yaml").c;
    } catch (const InputError& e) {
      FAIL(e.what() << "\n" << yaml);
    }
    INFO(yaml);
    REQUIRE(back == c);
    REQUIRE(same_bits(back.alpha, c.alpha));  // == would not tell -0.0 from 0.0
    REQUIRE(same_bits(back.beta, c.beta));
    REQUIRE(assay::to_yaml(back) == yaml);
  }
}

TEST_CASE("case: the spec path is written relative to the case folder", "[case]") {
  TempDir t;
  fs::create_directories(t.dir / "specs");
  fs::create_directories(t.dir / "cases");
  std::string yaml = assay::to_yaml(example_case(), t.dir / "specs" / "gemm.yaml", t.dir / "cases");
  CHECK_THAT(yaml, Catch::Contains("\nop: gemm\nspec: ../specs/gemm.yaml\nm: 3\n"));
  fs::path file = t.dir / "cases" / "c1.yaml";
  std::ofstream(file) << yaml;
  assay::LoadedCase lc = assay::load_case_file(file);
  CHECK(lc.c == example_case());
  CHECK(lc.spec == t.dir / "specs" / "gemm.yaml");
  CHECK(fs::equivalent(lc.spec.parent_path(), t.dir / "specs"));
  // Without a case folder the path is written as given; odd characters are quoted.
  CHECK_THAT(assay::to_yaml(example_case(), "my specs/a:b.yaml"), Catch::Contains("spec: \"my specs/a:b.yaml\"\n"));
  CHECK(assay::parse_case_yaml(assay::to_yaml(example_case(), "my specs/a:b.yaml"), "x").spec == "my specs/a:b.yaml");
  CHECK(assay::parse_case_yaml(assay::to_yaml(example_case(), "null"), "x").spec == "null");
  CHECK(assay::parse_case_yaml(assay::to_yaml(example_case(), "s.yaml"), "x", "base/dir").spec == "base/dir/s.yaml");
  CHECK(assay::parse_case_yaml(assay::to_yaml(example_case(), "/abs/s.yaml"), "x", "base").spec == "/abs/s.yaml");
}

TEST_CASE("case: limits are inclusive", "[case]") {
  CHECK(assay::parse_case_yaml(with_line(3, "m: 2147483648"), "x").c.m == int64_t(1) << 31);
  CHECK(assay::parse_case_yaml(with_line(3, "m: 0"), "x").c.m == 0);
  CHECK(assay::parse_case_yaml(with_line(8, "  a: {row_stride: 0, col_stride: 0, offset: 1099511627776}"), "x")
            .c.a.offset == int64_t(1) << 40);
  CHECK(assay::parse_case_yaml(with_line(14, "seed: 18446744073709551615"), "x").c.seed == UINT64_MAX);
  CHECK(assay::parse_case_yaml(with_line(14, "seed: 0"), "x").c.seed == 0);
  CHECK(assay::parse_case_yaml(with_line(11, "alpha: -1.5e-300"), "x").c.alpha == -1.5e-300);
  CHECK(assay::parse_case_yaml(with_line(15, ""), "x").c.origin.empty());
  CHECK(assay::parse_case_yaml(with_line(2, ""), "x").c.op == "gemm");  // op defaults to gemm
}

TEST_CASE("case: field errors name the line and the key", "[case]") {
  using Catch::Contains;
  CHECK_THAT(error_of(with_line(3, "m: -1")), Contains(at(3, "m")) && Contains("out of range"));
  CHECK_THAT(error_of(with_line(3, "m: 2147483649")), Contains(at(3, "m")));
  CHECK_THAT(error_of(with_line(3, "m: 99999999999999999999")), Contains(at(3, "m")));
  CHECK_THAT(error_of(with_line(4, "n: 3.5")), Contains(at(4, "n")) && Contains("integer"));
  CHECK_THAT(error_of(with_line(5, "k: \"8\"")), Contains(at(5, "k")) && Contains("integer"));
  CHECK_THAT(error_of(with_line(5, "k:")), Contains(at(5, "k")));
  CHECK_THAT(error_of(with_line(5, "k: [8]")), Contains(at(5, "k")) && Contains("a list"));
  CHECK_THAT(error_of(with_line(6, "dtypes: {a: f8, b: f16, c: f32}")),
             Contains(at(6, "dtypes.a")) && Contains("f64, f32, f16, bf16"));
  CHECK_THAT(error_of(with_line(6, "dtypes: {a: f16, b: f16, c: tf32}")), Contains(at(6, "dtypes.c")));
  CHECK_THAT(error_of(with_line(8, "  a: {row_stride: -1, col_stride: 1, offset: 1}")),
             Contains(at(8, "layout.a.row_stride")));
  CHECK_THAT(error_of(with_line(9, "  b: {row_stride: 1, col_stride: -9, offset: 0}")),
             Contains(at(9, "layout.b.col_stride")));
  CHECK_THAT(error_of(with_line(9, "  b: {row_stride: 1, col_stride: 9, offset: 1099511627777}")),
             Contains(at(9, "layout.b.offset")));
  CHECK_THAT(error_of(with_line(10, "  c: {row_stride: 65, col_stride: 1, offset: -1}")),
             Contains(at(10, "layout.c.offset")));
  CHECK_THAT(error_of(with_line(10, "  c: {row_stride: 65, col_stride: 1}")),
             Contains(at(10, "layout.c.offset")) && Contains("missing"));
  CHECK_THAT(error_of(with_line(9, "")), Contains(at(8, "layout.b")) && Contains("missing"));
  CHECK_THAT(error_of(with_line(10, "  d: {}")), Contains(at(10, "layout.d")) && Contains("unknown"));
  CHECK_THAT(error_of(with_line(11, "alpha: .nan")), Contains(at(11, "alpha")));
  CHECK_THAT(error_of(with_line(11, "alpha: inf")), Contains(at(11, "alpha")) && Contains("finite"));
  CHECK_THAT(error_of(with_line(11, "alpha: 1e400")), Contains(at(11, "alpha")));
  CHECK_THAT(error_of(with_line(12, "beta: nan")), Contains(at(12, "beta")) && Contains("finite"));
  CHECK_THAT(error_of(with_line(12, "beta: one")), Contains(at(12, "beta")));
  CHECK_THAT(error_of(with_line(13, "recipe: gaussian")),
             Contains(at(13, "recipe")) && Contains("ints, uniform, mixed, specials"));
  CHECK_THAT(error_of(with_line(14, "seed: -1")), Contains(at(14, "seed")));
  CHECK_THAT(error_of(with_line(14, "seed: 18446744073709551616")), Contains(at(14, "seed")));
  CHECK_THAT(error_of(with_line(14, "seed: 0x10")), Contains(at(14, "seed")));
  CHECK_THAT(error_of(with_line(15, "origin: [a]")), Contains(at(15, "origin")));
  CHECK_THAT(error_of(kExample + "spec: ''\n"), Contains(at(16, "spec")) && Contains("empty"));
}

TEST_CASE("case: key and version errors", "[case]") {
  using Catch::Contains;
  CHECK_THAT(error_of(kExample + "colour: red\n"), Contains(at(16, "colour")) && Contains("unknown key"));
  CHECK_THAT(error_of(kExample + "m: 4\n"), Contains(at(16, "m")) && Contains("duplicate"));
  CHECK_THAT(error_of(with_line(14, "")), Contains(at(1, "seed")) && Contains("missing"));
  CHECK_THAT(error_of(with_line(1, "")), Contains(at(2, "assay_case")) && Contains("missing"));
  CHECK_THAT(error_of(with_line(1, "assay_case: 2")), Contains(at(1, "assay_case")) && Contains("version 2"));
  // A newer version is reported as such, not as its unknown keys.
  CHECK_THAT(error_of(with_line(1, "assay_case: 2") + "new_key: 1\n"), Contains("version 2"));
  CHECK_THAT(error_of(with_line(1, "assay_case: one")), Contains(at(1, "assay_case")));
  CHECK_THAT(error_of(with_line(2, "op: conv")), Contains(at(2, "op")) && Contains("gemm"));
}

TEST_CASE("case: malformed and hostile files", "[case]") {
  using Catch::Contains;
  CHECK_THAT(error_of(""), Contains("case.yaml:1: ") && Contains("empty"));
  CHECK_THAT(error_of("- 1\n"), Contains("case.yaml:1: ") && Contains("mapping"));
  CHECK_THAT(error_of("assay_case: 1\nm: [3\nn: 4\n"), Contains("case.yaml:") && Contains("syntax"));
  CHECK_THAT(error_of("assay_case: 1\nm: 3\n  n: 4: 5\n"), Contains("case.yaml:3: ") && Contains("syntax"));
  CHECK_THAT(error_of(kExample.substr(0, 20) + std::string(1, '\0') + kExample.substr(20)),
             Contains("case.yaml:2: NUL byte"));
  CHECK_THAT(error_of(kExample + "# " + std::string(2 << 20, 'x') + "\n"), Contains("larger than 1 MiB"));
  CHECK_THAT(error_of(std::string(10'000'000, '\0')), Contains("larger than 1 MiB"));
  CHECK_THAT(error_of(std::string(500'000, '[')), Contains("case.yaml:"));
  CHECK_THAT(error_of(","), Contains("case.yaml:1: "));
  CHECK_THAT(error_of(kExample + "---\n" + kExample), Contains("case.yaml:16: ") && Contains("more than one"));
}

TEST_CASE("case: load_case_file names the file in errors", "[case]") {
  TempDir t;
  using Catch::Contains;
  auto load_error = [](const fs::path& p) {
    try {
      assay::load_case_file(p);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK_THAT(load_error(t.dir / "absent.yaml"), Contains("absent.yaml: cannot read"));
  CHECK_THAT(load_error(t.dir), Contains("not a regular file"));
  fs::path bad = t.dir / "bad.yaml";
  std::ofstream(bad) << with_line(3, "m: -3");
  CHECK_THAT(load_error(bad), Contains(bad.string() + ":3: key 'm'"));
}

TEST_CASE("case: the keep modifier round-trips and is checked", "[case]") {
  using Catch::Contains;
  Case c = example_case();
  c.keep[0].listed = 2, c.keep[0].at[0] = assay::keep_position(0, 3), c.keep[0].at[1] = assay::keep_position(2, 7);
  c.keep[1].lo = 0.25, c.keep[1].hi = 0.375;
  c.keep[2].listed = 0;  // nothing kept: all zero
  std::string yaml = assay::to_yaml(c);
  CHECK_THAT(yaml, Contains("keep: {a: [[0, 3], [2, 7]], b: {lo: 0.25, hi: 0.375}, c: []}"));
  CHECK(assay::parse_case_yaml(yaml, "k.yaml").c == c);
  CHECK_THAT(assay::describe(c), Contains("keep A=2@(0,3)(2,7) B=h[0.25,0.375) C=0@"));
  CHECK(assay::parse_case_yaml(kExample, "k.yaml").c.keep == Case().keep);  // absent: every element kept
  CHECK_THAT(error_of(kExample + "keep: {d: []}\n"), Contains("keep.d") && Contains("unknown"));
  CHECK_THAT(error_of(kExample + "keep: {a: [[1]]}\n"), Contains("keep.a[0]") && Contains("[row, col]"));
  CHECK_THAT(error_of(kExample + "keep: {a: [[1, -2]]}\n"), Contains("keep.a[0][1]"));
  CHECK_THAT(error_of(kExample + "keep: {b: {lo: 0.5, hi: 0.25}}\n"), Contains("keep.b.lo"));
  CHECK_THAT(error_of(kExample + "keep: {a: 3}\n"), Contains("keep.a") && Contains("list of [row, col]"));
  std::string many = "keep: {a: [";
  for (int i = 0; i <= assay::Keep::kMaxListed; ++i) many += (i ? ", " : "") + std::string("[0, 0]");
  CHECK_THAT(error_of(kExample + many + "]}\n"), Contains("at most 32"));
}
