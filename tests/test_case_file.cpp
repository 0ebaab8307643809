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
#include "ops/gemm/gemm_problem.h"

namespace fs = std::filesystem;
using assay::Case;
using assay::DType;
using assay::InputError;
namespace gemm = assay::gemm;

namespace {

// GEMM's view of the example; the case files below hold it as a generic case.
gemm::Problem example_problem() {
  gemm::Problem c;
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
Case example_case() { return gemm::to_case(example_problem()); }

// The example written out (version 2); the error tests below edit it line by line.
const std::string kExample =
    "assay_case: 2\n"                                                                 // 1
    "op: gemm\n"                                                                      // 2
    "sizes: {m: 3, n: 65, k: 8}\n"                                                    // 3
    "tensors:\n"                                                                      // 4
    "  A: {role: input, dtype: f16, shape: [3, 8], strides: [8, 1], offset: 1}\n"     // 5
    "  B: {role: input, dtype: f16, shape: [8, 65], strides: [1, 9], offset: 0}\n"    // 6
    "  C: {role: inout, dtype: f32, shape: [3, 65], strides: [65, 1], offset: 0}\n"   // 7
    "scalars: {alpha: 1, beta: 0}\n"                                                  // 8
    "recipe: ints\n"                                                                  // 9
    "seed: 12345678901234567890\n"                                                    // 10
    "origin: \"boundary m=tile-1\"\n";                                                // 11

// The same case as a version-1 file (GEMM's own keys, before the generic
// case): it still loads, to the same case (docs/cases.md, "Version 1 files").
const std::string kExampleV1 =
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

// `text` with line `line` (1-based) replaced by `replacement`.
std::string with_line_of(const std::string& text, int line, const std::string& replacement) {
  std::string out;
  size_t start = 0;
  for (int i = 1; start < text.size(); ++i) {
    size_t end = text.find('\n', start) + 1;
    out += i == line ? replacement + "\n" : text.substr(start, end - start);
    start = end;
  }
  return out;
}
std::string with_line(int line, const std::string& replacement) { return with_line_of(kExample, line, replacement); }
std::string with_v1_line(int line, const std::string& replacement) {
  return with_line_of(kExampleV1, line, replacement);
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

// A random but valid GEMM case, leaning on boundary values.
gemm::Problem random_problem(std::mt19937_64& rng) {
  auto pick = [&](std::initializer_list<int64_t> edges, int64_t hi) {
    return rng() % 2 ? edges.begin()[rng() % edges.size()] : int64_t(rng() % uint64_t(hi + 1));
  };
  const int64_t dim_max = int64_t(1) << 31, ext_max = int64_t(1) << 40;
  auto layout = [&]() {
    return gemm::Layout{pick({0, 1, 65, ext_max}, 1 << 20), pick({0, 1, ext_max}, 1 << 20),
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
  gemm::Problem c;
  c.m = pick({0, 1, dim_max}, 4096), c.n = pick({0, 1, dim_max}, 4096), c.k = pick({0, 1, dim_max}, 4096);
  c.a_type = types[rng() % 4], c.b_type = types[rng() % 4], c.c_type = types[rng() % 4];
  c.a = layout(), c.b = layout(), c.c = layout();
  c.alpha = scalar(), c.beta = scalar();
  c.recipe = assay::Recipe(rng() % 4);
  c.seed = rng() % 3 ? rng() : (rng() % 2 ? 0 : std::numeric_limits<uint64_t>::max());
  for (auto& k : c.keep) {  // mostly every element kept; else a list or a hash interval
    const uint64_t r = rng() % 4;
    if (r == 1) {
      k.listed = int32_t(rng() % (assay::Keep::kMaxListed + 1));
      for (int i = 0; i < k.listed; ++i) k.at[i] = assay::keep_position(rng() % (uint64_t(1) << 32), rng() % uint64_t(dim_max));
    } else if (r == 2) {
      k.lo = double(rng() % 1000) / 1000, k.hi = k.lo + double(rng() % 1000) / 1000 * (1 - k.lo);
    }
  }
  const std::string chars = "abc XYZ019=-+:#,[]{}&*!|>'\"\\%@`\t\n\r\x01\x7f\xc3\xa9";
  for (int i = 0, n = int(rng() % 30); i < n; ++i) c.origin += chars[rng() % chars.size()];
  return c;
}

bool same_scalar_bits(const Case& x, const Case& y) {
  if (x.scalars.size() != y.scalars.size()) return false;
  for (size_t i = 0; i < x.scalars.size(); ++i)
    if (!same_bits(x.scalars[i].value, y.scalars[i].value)) return false;  // == would not tell -0.0 from 0.0
  return true;
}

}  // namespace

TEST_CASE("case: the example reads back field by field", "[case]") {
  assay::LoadedCase lc = assay::parse_case_yaml(kExample, "case.yaml");
  CHECK(lc.c == example_case());
  CHECK(gemm::problem(lc.c) == example_problem());
  CHECK(lc.spec.empty());
}

TEST_CASE("case: to_yaml writes the documented layout", "[case]") {
  CHECK(assay::to_yaml(example_case()) == kExample);
  gemm::Problem p = example_problem();
  p.origin.clear();  // no origin, no line
  CHECK(assay::to_yaml(gemm::to_case(p)) == kExample.substr(0, kExample.find("origin:")));
  p.alpha = 0.7, p.beta = -1.3;
  CHECK_THAT(assay::to_yaml(gemm::to_case(p)), Catch::Contains("scalars: {alpha: 0.7, beta: -1.3}\n"));
}

TEST_CASE("case: describe is one line", "[case]") {
  CHECK(assay::describe(example_case()) ==
        "gemm m=3 n=65 k=8 A=f16[3,8:8,1]+1 B=f16[8,65:1,9] C=f32[3,65:65,1]/inout alpha=1 beta=0 ints "
        "seed=12345678901234567890");
  gemm::Problem p = example_problem();
  p.alpha = 0.7, p.recipe = assay::Recipe::specials, p.seed = 7, p.c_type = DType::bf16;
  CHECK(assay::describe(gemm::to_case(p)) ==
        "gemm m=3 n=65 k=8 A=f16[3,8:8,1]+1 B=f16[8,65:1,9] C=bf16[3,65:65,1]/inout alpha=0.7 beta=0 specials seed=7");
}

TEST_CASE("case: the repro line reads back to the same case", "[case]") {
  // Keep lists and intervals, offsets on every tensor, odd scalars.
  gemm::Problem p = example_problem();
  p.origin.clear();  // not on the repro line
  p.a = {1, 11, 5}, p.b = {70, 1, 3}, p.c = {1, 3, 129};
  p.alpha = -0.1, p.beta = 1.0 / 3.0;
  p.keep[0].listed = 3;
  p.keep[0].at[0] = assay::keep_position(0, 3), p.keep[0].at[1] = assay::keep_position(2, 7);
  p.keep[0].at[2] = assay::keep_position(4294967295u, 2147483647);
  p.keep[1].lo = 0.125, p.keep[1].hi = 0.1 + 0.2;
  p.keep[2].listed = 0;
  const Case c = gemm::to_case(p);
  const std::string line = assay::describe(c);
  INFO(line);
  CHECK(line ==
        "gemm m=3 n=65 k=8 A=f16[3,8:1,11]+5 B=f16[8,65:70,1]+3 C=f32[3,65:1,3]+129/inout alpha=-0.1 "
        "beta=0.3333333333333333 ints seed=12345678901234567890 keep A=3@(0,3)(2,7)(4294967295,2147483647) "
        "B=h[0.125,0.30000000000000004) C=0@");
  const Case back = assay::parse_repro(line);
  CHECK(back == c);
  CHECK(same_scalar_bits(back, c));
  CHECK(gemm::problem(back) == p);
  // Negative zero and extreme scalars keep their bits.
  p.alpha = -0.0, p.beta = 5e-324;
  CHECK(same_scalar_bits(assay::parse_repro(assay::describe(gemm::to_case(p))), gemm::to_case(p)));
  p.alpha = std::numeric_limits<double>::max(), p.beta = -std::numeric_limits<double>::min();
  CHECK(assay::parse_repro(assay::describe(gemm::to_case(p))) == gemm::to_case(p));
  // Lines describe() could not have written are refused.
  for (const char* bad : {"", "gemm m=3", "gemm m=3 A=f16[3,8:8] ints seed=1", "gemm m=3 A=f8[3:1] ints seed=1",
                          "gemm m=-3 A=f16[3:1] ints seed=1", "gemm A=f16[3:1] gaussian seed=1",
                          "gemm A=f16[3:1] ints seed=x", "gemm A=f16[3:1] ints seed=1 keep B=0@",
                          "gemm A=f16[3:1] ints seed=1 keep A=2@(0,1)"}) {
    INFO(bad);
    CHECK_THROWS_AS(assay::parse_repro(bad), InputError);
  }
}

TEST_CASE("case: random cases round-trip exactly", "[case]") {
  std::mt19937_64 rng(2024);
  for (int i = 0; i < 2000; ++i) {
    const gemm::Problem p = random_problem(rng);
    const Case c = gemm::to_case(p);
    std::string yaml = assay::to_yaml(c);
    Case back;
    try {
      back = assay::parse_case_yaml(yaml, "rt.yaml").c;
    } catch (const InputError& e) {
      FAIL(e.what() << "\n" << yaml);
    }
    INFO(yaml);
    REQUIRE(back == c);
    REQUIRE(gemm::problem(back) == p);
    REQUIRE(same_scalar_bits(back, c));
    REQUIRE(assay::to_yaml(back) == yaml);
    // The repro line too (it has no origin).
    Case no_origin = c;
    no_origin.origin.clear();
    const Case repro = assay::parse_repro(assay::describe(c));
    REQUIRE(repro == no_origin);
    REQUIRE(same_scalar_bits(repro, c));
  }
}

TEST_CASE("case: a version-1 GEMM case file loads to the same case", "[case]") {
  // The migration rule (docs/cases.md): m, n, k -> sizes; dtypes and layout
  // {a, b, c} -> tensors A, B (inputs), C (inout), strides [row_stride,
  // col_stride], the same offsets; alpha, beta -> scalars; keep {a, b, c} -> keep {A, B, C}.
  assay::LoadedCase lc = assay::parse_case_yaml(kExampleV1, "case.yaml");
  CHECK(lc.c == example_case());
  CHECK(gemm::problem(lc.c) == example_problem());
  CHECK(lc.spec.empty());
  CHECK(assay::to_yaml(lc.c) == kExample);  // written as version 2 from then on
  // With keep, a spec path, and op left out (version 1 defaulted it to gemm).
  std::string v1 = with_v1_line(2, "") + "keep: {a: [[0, 3], [2, 7]], b: {lo: 0.25, hi: 0.375}, c: []}\n";
  gemm::Problem want = example_problem();
  want.keep[0].listed = 2, want.keep[0].at[0] = assay::keep_position(0, 3), want.keep[0].at[1] = assay::keep_position(2, 7);
  want.keep[1].lo = 0.25, want.keep[1].hi = 0.375;
  want.keep[2].listed = 0;
  TempDir t;
  fs::create_directories(t.dir / "cases");
  std::ofstream(t.dir / "cases" / "old.yaml") << v1 << "spec: ../specs/gemm.yaml\n";
  assay::LoadedCase old = assay::load_case_file(t.dir / "cases" / "old.yaml");
  CHECK(old.c == gemm::to_case(want));
  CHECK(old.spec == t.dir / "specs" / "gemm.yaml");
  CHECK(assay::parse_case_yaml(assay::to_yaml(old.c), "v2.yaml").c == old.c);
  // Its limits and errors are version 1's, named by its own keys.
  using Catch::Contains;
  CHECK(gemm::problem(assay::parse_case_yaml(with_v1_line(3, "m: 2147483648"), "x").c).m == int64_t(1) << 31);
  CHECK(gemm::problem(assay::parse_case_yaml(with_v1_line(8, "  a: {row_stride: 0, col_stride: 0, offset: 1099511627776}"),
                                             "x").c).a.offset == int64_t(1) << 40);
  CHECK_THAT(error_of(with_v1_line(3, "m: -1")), Contains(at(3, "m")) && Contains("out of range"));
  CHECK_THAT(error_of(with_v1_line(4, "n: 3.5")), Contains(at(4, "n")) && Contains("integer"));
  CHECK_THAT(error_of(with_v1_line(6, "dtypes: {a: f8, b: f16, c: f32}")),
             Contains(at(6, "dtypes.a")) && Contains("f64, f32, f16, bf16"));
  CHECK_THAT(error_of(with_v1_line(8, "  a: {row_stride: -1, col_stride: 1, offset: 1}")),
             Contains(at(8, "layout.a.row_stride")));
  CHECK_THAT(error_of(with_v1_line(10, "  c: {row_stride: 65, col_stride: 1}")),
             Contains(at(10, "layout.c.offset")) && Contains("missing"));
  CHECK_THAT(error_of(with_v1_line(9, "")), Contains(at(8, "layout.b")) && Contains("missing"));
  CHECK_THAT(error_of(with_v1_line(10, "  d: {}")), Contains(at(10, "layout.d")) && Contains("unknown"));
  CHECK_THAT(error_of(with_v1_line(11, "alpha: inf")), Contains(at(11, "alpha")) && Contains("finite"));
  CHECK_THAT(error_of(with_v1_line(13, "recipe: gaussian")), Contains(at(13, "recipe")));
  CHECK_THAT(error_of(with_v1_line(14, "")), Contains(at(1, "seed")) && Contains("missing"));
  CHECK_THAT(error_of(with_v1_line(2, "op: conv")), Contains(at(2, "op")) && Contains("gemm"));
  CHECK_THAT(error_of(kExampleV1 + "sizes: {m: 3}\n"), Contains(at(16, "sizes")) && Contains("unknown key"));
  CHECK_THAT(error_of(kExampleV1 + "keep: {a: [[1]]}\n"), Contains("keep.a[0]") && Contains("[row, col]"));
  CHECK_THAT(error_of(kExampleV1 + "keep: {d: []}\n"), Contains("keep.d") && Contains("unknown"));
}

TEST_CASE("case: the spec path is written relative to the case folder", "[case]") {
  TempDir t;
  fs::create_directories(t.dir / "specs");
  fs::create_directories(t.dir / "cases");
  std::string yaml = assay::to_yaml(example_case(), t.dir / "specs" / "gemm.yaml", t.dir / "cases");
  CHECK_THAT(yaml, Catch::Contains("\nop: gemm\nspec: ../specs/gemm.yaml\nsizes: {m: 3, n: 65, k: 8}\n"));
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
  auto read = [](const std::string& yaml) { return gemm::problem(assay::parse_case_yaml(yaml, "x").c); };
  CHECK(assay::parse_case_yaml(with_line(3, "sizes: {m: 2147483648, n: 65, k: 8}"), "x").c.size("m") == int64_t(1) << 31);
  CHECK(assay::parse_case_yaml(with_line(3, "sizes: {m: 0, n: 65, k: 8}"), "x").c.size("m") == 0);
  CHECK(assay::parse_case_yaml(with_line(5, "  A: {role: input, dtype: f16, shape: [2147483648, 8], strides: [0, 0], "
                                            "offset: 1099511627776}"),
                               "x")
            .c.tensor("A")
            .offset == int64_t(1) << 40);
  CHECK(assay::parse_case_yaml(with_line(5, "  A: {role: input, dtype: f16, shape: [3, 8], strides: [1099511627776, 1], "
                                            "offset: 1}"),
                               "x")
            .c.tensor("A")
            .strides[0] == int64_t(1) << 40);
  CHECK(read(with_line(10, "seed: 18446744073709551615")).seed == UINT64_MAX);
  CHECK(read(with_line(10, "seed: 0")).seed == 0);
  CHECK(read(with_line(8, "scalars: {alpha: -1.5e-300, beta: 0}")).alpha == -1.5e-300);
  CHECK(read(with_line(11, "")).origin.empty());
  // Sizes and scalars are optional (an op may have none); six dimensions at most.
  CHECK(assay::parse_case_yaml(with_line(8, ""), "x").c.scalars.empty());
  CHECK(assay::parse_case_yaml(with_line(3, ""), "x").c.sizes.empty());
  CHECK(assay::parse_case_yaml(with_line(5, "  A: {role: input, dtype: f16, shape: [1, 1, 1, 1, 1, 3], "
                                            "strides: [3, 3, 3, 3, 3, 1], offset: 1}"),
                               "x")
            .c.tensor("A")
            .shape.size() == 6);
}

TEST_CASE("case: field errors name the line and the key", "[case]") {
  using Catch::Contains;
  CHECK_THAT(error_of(with_line(3, "sizes: {m: -1, n: 65, k: 8}")), Contains(at(3, "sizes.m")) && Contains("out of range"));
  CHECK_THAT(error_of(with_line(3, "sizes: {m: 2147483649, n: 65, k: 8}")), Contains(at(3, "sizes.m")));
  CHECK_THAT(error_of(with_line(3, "sizes: {m: 99999999999999999999, n: 65, k: 8}")), Contains(at(3, "sizes.m")));
  CHECK_THAT(error_of(with_line(3, "sizes: {m: 3, n: 3.5, k: 8}")), Contains(at(3, "sizes.n")) && Contains("integer"));
  CHECK_THAT(error_of(with_line(3, "sizes: {m: 3, n: 65, k: \"8\"}")), Contains(at(3, "sizes.k")) && Contains("integer"));
  CHECK_THAT(error_of(with_line(3, "sizes: {m: 3, n: 65, k: }")), Contains(at(3, "sizes.k")));
  CHECK_THAT(error_of(with_line(3, "sizes: {m: 3, n: 65, k: [8]}")), Contains(at(3, "sizes.k")) && Contains("a list"));
  CHECK_THAT(error_of(with_line(5, "  A: {role: input, dtype: f8, shape: [3, 8], strides: [8, 1], offset: 1}")),
             Contains(at(5, "tensors.A.dtype")) && Contains("f64, f32, f16, bf16"));
  CHECK_THAT(error_of(with_line(7, "  C: {role: inout, dtype: tf32, shape: [3, 65], strides: [65, 1], offset: 0}")),
             Contains(at(7, "tensors.C.dtype")));
  CHECK_THAT(error_of(with_line(7, "  C: {role: output0, dtype: f32, shape: [3, 65], strides: [65, 1], offset: 0}")),
             Contains(at(7, "tensors.C.role")) && Contains("input, output, inout"));
  CHECK_THAT(error_of(with_line(5, "  A: {role: input, dtype: f16, shape: [3, 8], strides: [-1, 1], offset: 1}")),
             Contains(at(5, "tensors.A.strides[0]")));
  CHECK_THAT(error_of(with_line(6, "  B: {role: input, dtype: f16, shape: [8, 65], strides: [1, -9], offset: 0}")),
             Contains(at(6, "tensors.B.strides[1]")));
  CHECK_THAT(error_of(with_line(6, "  B: {role: input, dtype: f16, shape: [8, 65], strides: [1, 9], offset: 1099511627777}")),
             Contains(at(6, "tensors.B.offset")));
  CHECK_THAT(error_of(with_line(6, "  B: {role: input, dtype: f16, shape: [8, 2147483649], strides: [1, 9], offset: 0}")),
             Contains(at(6, "tensors.B.shape[1]")));
  CHECK_THAT(error_of(with_line(7, "  C: {role: inout, dtype: f32, shape: [3, 65], strides: [65, 1], offset: -1}")),
             Contains(at(7, "tensors.C.offset")));
  CHECK_THAT(error_of(with_line(7, "  C: {role: inout, dtype: f32, shape: [3, 65], strides: [65, 1]}")),
             Contains(at(7, "tensors.C.offset")) && Contains("missing"));
  CHECK_THAT(error_of(with_line(7, "  C: {role: inout, dtype: f32, shape: [3, 65], strides: [65], offset: 0}")),
             Contains(at(7, "tensors.C.strides")) && Contains("1 strides for 2 dimensions"));
  CHECK_THAT(error_of(with_line(7, "  C: {role: inout, dtype: f32, shape: 3, strides: [65, 1], offset: 0}")),
             Contains(at(7, "tensors.C.shape")) && Contains("list"));
  CHECK_THAT(error_of(with_line(7, "  C: {role: inout, dtype: f32, shape: [1, 1, 1, 1, 1, 1, 3], "
                                   "strides: [3, 3, 3, 3, 3, 3, 1], offset: 0}")),
             Contains(at(7, "tensors.C.shape")) && Contains("at most 6"));
  CHECK_THAT(error_of(with_line(7, "  C: {role: inout, dtype: f32, shape: [3, 65], strides: [65, 1], offset: 0, pad: 1}")),
             Contains(at(7, "tensors.C.pad")) && Contains("unknown"));
  CHECK_THAT(error_of(with_line(8, "scalars: {alpha: .nan, beta: 0}")), Contains(at(8, "scalars.alpha")));
  CHECK_THAT(error_of(with_line(8, "scalars: {alpha: inf, beta: 0}")), Contains(at(8, "scalars.alpha")) && Contains("finite"));
  CHECK_THAT(error_of(with_line(8, "scalars: {alpha: 1e400, beta: 0}")), Contains(at(8, "scalars.alpha")));
  CHECK_THAT(error_of(with_line(8, "scalars: {alpha: 1, beta: nan}")), Contains(at(8, "scalars.beta")) && Contains("finite"));
  CHECK_THAT(error_of(with_line(8, "scalars: {alpha: 1, beta: one}")), Contains(at(8, "scalars.beta")));
  CHECK_THAT(error_of(with_line(9, "recipe: gaussian")),
             Contains(at(9, "recipe")) && Contains("ints, uniform, mixed, specials"));
  CHECK_THAT(error_of(with_line(10, "seed: -1")), Contains(at(10, "seed")));
  CHECK_THAT(error_of(with_line(10, "seed: 18446744073709551616")), Contains(at(10, "seed")));
  CHECK_THAT(error_of(with_line(10, "seed: 0x10")), Contains(at(10, "seed")));
  CHECK_THAT(error_of(with_line(11, "origin: [a]")), Contains(at(11, "origin")));
  CHECK_THAT(error_of(kExample + "spec: ''\n"), Contains(at(12, "spec")) && Contains("empty"));
}

TEST_CASE("case: key and version errors", "[case]") {
  using Catch::Contains;
  CHECK_THAT(error_of(kExample + "colour: red\n"), Contains(at(12, "colour")) && Contains("unknown key"));
  CHECK_THAT(error_of(kExample + "seed: 4\n"), Contains(at(12, "seed")) && Contains("duplicate"));
  CHECK_THAT(error_of(with_line(3, "sizes: {m: 3, n: 65, m: 8}")), Contains(at(3, "sizes.m")) && Contains("duplicate"));
  CHECK_THAT(error_of(kExample + "m: 4\n"), Contains(at(12, "m")) && Contains("unknown key"));  // version 1's keys are not version 2's
  CHECK_THAT(error_of(with_line(10, "")), Contains(at(1, "seed")) && Contains("missing"));
  CHECK_THAT(error_of(with_line(2, "")), Contains(at(1, "op")) && Contains("missing"));
  CHECK_THAT(error_of(with_line(1, "")), Contains(at(2, "assay_case")) && Contains("missing"));
  CHECK_THAT(error_of(with_line(1, "assay_case: 3")), Contains(at(1, "assay_case")) && Contains("version 3"));
  CHECK_THAT(error_of(with_line(1, "assay_case: 0")), Contains(at(1, "assay_case")) && Contains("version 0"));
  // A newer version is reported as such, not as its unknown keys.
  CHECK_THAT(error_of(with_line(1, "assay_case: 3") + "new_key: 1\n"), Contains("version 3"));
  CHECK_THAT(error_of(with_line(1, "assay_case: one")), Contains(at(1, "assay_case")));
  // Version 2 files in version 1's keys, and the reverse, are refused.
  CHECK_THAT(error_of(with_line(1, "assay_case: 1")), Contains("case.yaml:") && Contains("unknown key"));
  CHECK_THAT(error_of(with_v1_line(1, "assay_case: 2")), Contains("case.yaml:") && Contains("unknown key"));
  CHECK_THAT(error_of("assay_case: 2\nop: gemm\ntensors: {}\nrecipe: ints\nseed: 1\n"),
             Contains(at(3, "tensors")) && Contains("no tensors"));
  CHECK_THAT(error_of(kExample.substr(0, kExample.find("tensors:")) + kExample.substr(kExample.find("scalars:"))),
             Contains(at(1, "tensors")) && Contains("missing"));
}

TEST_CASE("case: malformed and hostile files", "[case]") {
  using Catch::Contains;
  CHECK_THAT(error_of(""), Contains("case.yaml:1: ") && Contains("empty"));
  CHECK_THAT(error_of("- 1\n"), Contains("case.yaml:1: ") && Contains("mapping"));
  CHECK_THAT(error_of("assay_case: 2\nsizes: [3\nn: 4\n"), Contains("case.yaml:") && Contains("syntax"));
  CHECK_THAT(error_of("assay_case: 2\nop: gemm\n  n: 4: 5\n"), Contains("case.yaml:3: ") && Contains("syntax"));
  CHECK_THAT(error_of(kExample.substr(0, 20) + std::string(1, '\0') + kExample.substr(20)),
             Contains("case.yaml:2: NUL byte"));
  CHECK_THAT(error_of(kExample + "# " + std::string(2 << 20, 'x') + "\n"), Contains("larger than 1 MiB"));
  CHECK_THAT(error_of(std::string(10'000'000, '\0')), Contains("larger than 1 MiB"));
  CHECK_THAT(error_of(std::string(500'000, '[')), Contains("case.yaml:"));
  CHECK_THAT(error_of(","), Contains("case.yaml:1: "));
  CHECK_THAT(error_of(kExample + "---\n" + kExample), Contains("case.yaml:12: ") && Contains("more than one"));
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
  std::ofstream(bad) << with_line(3, "sizes: {m: -3, n: 65, k: 8}");
  CHECK_THAT(load_error(bad), Contains(bad.string() + ":3: key 'sizes.m'"));
  fs::path bad_v1 = t.dir / "bad_v1.yaml";
  std::ofstream(bad_v1) << with_v1_line(3, "m: -3");
  CHECK_THAT(load_error(bad_v1), Contains(bad_v1.string() + ":3: key 'm'"));
}

TEST_CASE("case: the keep modifier round-trips and is checked", "[case]") {
  using Catch::Contains;
  gemm::Problem p = example_problem();
  p.keep[0].listed = 2, p.keep[0].at[0] = assay::keep_position(0, 3), p.keep[0].at[1] = assay::keep_position(2, 7);
  p.keep[1].lo = 0.25, p.keep[1].hi = 0.375;
  p.keep[2].listed = 0;  // nothing kept: all zero
  const Case c = gemm::to_case(p);
  std::string yaml = assay::to_yaml(c);
  CHECK_THAT(yaml, Contains("keep: {A: [[0, 3], [2, 7]], B: {lo: 0.25, hi: 0.375}, C: []}"));
  CHECK(assay::parse_case_yaml(yaml, "k.yaml").c == c);
  CHECK(gemm::problem(assay::parse_case_yaml(yaml, "k.yaml").c) == p);
  CHECK_THAT(assay::describe(c), Contains("keep A=2@(0,3)(2,7) B=h[0.25,0.375) C=0@"));
  for (const auto& t : assay::parse_case_yaml(kExample, "k.yaml").c.tensors)
    CHECK(t.keep == assay::Keep());  // absent: every element kept
  CHECK_THAT(error_of(kExample + "keep: {D: []}\n"), Contains("keep.D") && Contains("no tensor named 'D'"));
  CHECK_THAT(error_of(kExample + "keep: {A: [[1]]}\n"), Contains("keep.A[0]") && Contains("[row, col]"));
  CHECK_THAT(error_of(kExample + "keep: {A: [[1, -2]]}\n"), Contains("keep.A[0][1]"));
  CHECK_THAT(error_of(kExample + "keep: {B: {lo: 0.5, hi: 0.25}}\n"), Contains("keep.B.lo"));
  CHECK_THAT(error_of(kExample + "keep: {A: 3}\n"), Contains("keep.A") && Contains("list of [row, col]"));
  std::string many = "keep: {A: [";
  for (int i = 0; i <= assay::Keep::kMaxListed; ++i) many += (i ? ", " : "") + std::string("[0, 0]");
  CHECK_THAT(error_of(kExample + many + "]}\n"), Contains("at most 32"));
}

TEST_CASE("case: elements share memory only through an input's broadcast", "[case]") {
  using Catch::Contains;
  auto layouts_error = [](int line, const std::string& replacement) -> std::string {
    try {
      assay::check_layouts(assay::parse_case_yaml(with_line(line, replacement), "case.yaml").c);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  };
  CHECK(layouts_error(9, "recipe: ints") == "(no error)");
  CHECK_THAT(layouts_error(5, "  A: {role: input, dtype: f16, shape: [3, 8], strides: [4, 1], offset: 1}"),
             Contains("tensor A") && Contains("share memory"));
  CHECK_THAT(layouts_error(6, "  B: {role: input, dtype: f16, shape: [8, 65], strides: [1, 1], offset: 0}"),
             Contains("tensor B") && Contains("share memory"));
  CHECK_THAT(layouts_error(7, "  C: {role: inout, dtype: f32, shape: [3, 65], strides: [0, 1], offset: 0}"),
             Contains("tensor C") && Contains("cannot broadcast"));
  CHECK(layouts_error(5, "  A: {role: input, dtype: f16, shape: [3, 8], strides: [0, 1], offset: 1}") == "(no error)");
}
