// Spec files: a full spec reads back field by field, and every malformed
// input names the file, the line and the key.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "core/error.h"
#include "spec/spec.h"

namespace fs = std::filesystem;
using assay::InputError;
using assay::Spec;

namespace {

// A scratch folder holding spec.yaml's neighbours: kernel.cu and a subfolder.
struct SpecDir {
  fs::path dir;
  SpecDir() {
    std::random_device rd;
    dir = fs::temp_directory_path() / ("assay_test_spec_" + std::to_string(rd()));
    fs::create_directories(dir / "kernels" / "folder.cu");
    write("kernels/gemm.cu", "// kernel\n");
  }
  ~SpecDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name, std::ios::binary) << text;
    return dir / name;
  }
  Spec parse(const std::string& yaml) const { return assay::parse_spec(yaml, dir / "spec.yaml"); }
  // The InputError message parse() raises, or "(no error)".
  std::string error(const std::string& yaml) const {
    try {
      parse(yaml);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  }
  // "spec.yaml:LINE: key 'KEY'", the prefix every keyed message starts with.
  std::string at(int line, const std::string& key) const {
    return (dir / "spec.yaml").string() + ":" + std::to_string(line) + ": key '" + key + "'";
  }
  std::string at(int line) const { return (dir / "spec.yaml").string() + ":" + std::to_string(line) + ": "; }
};

const std::string kMinimal =
    "name: tiny\n"                  // 1
    "backend: cuda\n"               // 2
    "source: kernels/gemm.cu\n"     // 3
    "dtypes: {a: f16, b: f16, c: f32}\n"  // 4
    "compute: f32\n";               // 5

// kMinimal with line `line` (1-based) replaced by `replacement`.
std::string with_line(int line, const std::string& replacement) {
  std::string out;
  size_t start = 0;
  for (int i = 1; start < kMinimal.size(); ++i) {
    size_t end = kMinimal.find('\n', start) + 1;
    out += i == line ? replacement + "\n" : kMinimal.substr(start, end - start);
    start = end;
  }
  return out;
}

}  // namespace

TEST_CASE("spec: a full spec reads back", "[spec]") {
  SpecDir d;
  Spec s = d.parse(
      "# a comment first\n"
      "name: wmma_tile\n"
      "op: gemm\n"
      "backend: cuda\n"
      "source: kernels/gemm.cu\n"
      "entry: my_entry_2\n"
      "dtypes:\n"
      "  a: bf16\n"
      "  b: f16\n"
      "  c: f64\n"
      "compute: tf32\n"
      "subnormals: flush\n"
      "requires:\n"
      "  - k % 8 == 0\n"
      "  - aligned(A, 16) && row_major(B)\n"
      "deterministic: false\n"
      "expect: out_of_bounds_write\n"
      "flags: [-O3, \"-DTILE=64\"]\n"
      "libs: [cublas]\n");
  CHECK(s.file == d.dir / "spec.yaml");
  CHECK(s.name == "wmma_tile");
  CHECK(s.op == "gemm");
  CHECK(s.backend == assay::BackendKind::cuda);
  CHECK(s.source == fs::weakly_canonical(d.dir / "kernels" / "gemm.cu"));
  CHECK(s.source.is_absolute());
  CHECK(s.entry == "my_entry_2");
  CHECK(s.dtype("a") == assay::DType::bf16);
  CHECK(s.dtype("A") == assay::DType::bf16);  // names match the op's tensors without regard to case
  CHECK(s.dtype("b") == assay::DType::f16);
  CHECK(s.dtype("c") == assay::DType::f64);
  CHECK(s.compute == assay::Compute::tf32);
  CHECK(s.subnormals == assay::Subnormals::flush);
  REQUIRE(s.requires_.size() == 2);
  CHECK(s.requires_[0].text() == "k % 8 == 0");
  CHECK(s.requires_[1].text() == "aligned(A, 16) && row_major(B)");
  CHECK_FALSE(s.deterministic);
  CHECK(s.expect == "out_of_bounds_write");
  CHECK(s.flags == std::vector<std::string>{"-O3", "-DTILE=64"});
  CHECK(s.libs == std::vector<std::string>{"cublas"});
}

TEST_CASE("spec: defaults", "[spec]") {
  SpecDir d;
  Spec s = d.parse(kMinimal);
  CHECK(s.name == "tiny");
  CHECK(s.op == "gemm");
  CHECK(s.entry == "assay_run");
  CHECK(s.deterministic);
  CHECK(s.subnormals == assay::Subnormals::ieee);
  CHECK(d.parse(kMinimal + "subnormals: ieee\n").subnormals == assay::Subnormals::ieee);
  CHECK(s.expect.empty());
  CHECK(s.requires_.empty());
  CHECK(s.flags.empty());
  CHECK(s.libs.empty());
  CHECK(d.parse(with_line(2, "backend: host")).backend == assay::BackendKind::host);
}

TEST_CASE("spec: requires may be one string", "[spec]") {
  SpecDir d;
  Spec s = d.parse(kMinimal + "requires: \"k % 8 == 0 && m > 0\"\n");
  REQUIRE(s.requires_.size() == 1);
  CHECK(s.requires_[0].text() == "k % 8 == 0 && m > 0");
  CHECK(d.parse(kMinimal + "expect: pass\n").expect == "pass");
  CHECK(d.parse(kMinimal + "flags: []\n").flags.empty());
}

TEST_CASE("spec: load_spec reads the file and resolves the source next to it", "[spec]") {
  SpecDir d;
  fs::path file = d.write("spec.yaml", with_line(3, "source: ./kernels/../kernels/gemm.cu"));
  Spec s = assay::load_spec(file);
  CHECK(s.file == file);
  CHECK(s.source == fs::weakly_canonical(d.dir / "kernels/gemm.cu"));
}

TEST_CASE("spec: errors name the line and the key", "[spec]") {
  SpecDir d;
  using Catch::Contains;
  // Keys: unknown, duplicate, missing (reported at the mapping's line).
  CHECK_THAT(d.error(kMinimal + "colour: red\n"), Contains(d.at(6, "colour")) && Contains("unknown key"));
  CHECK_THAT(d.error(kMinimal + "name: again\n"), Contains(d.at(6, "name")) && Contains("duplicate"));
  CHECK_THAT(d.error(with_line(1, "# no name")), Contains(d.at(2, "name")) && Contains("missing"));
  CHECK_THAT(d.error(with_line(2, "")), Contains(d.at(1, "backend")) && Contains("missing"));
  CHECK_THAT(d.error(with_line(5, "")), Contains(d.at(1, "compute")) && Contains("missing"));
  // Wrong types and values.
  CHECK_THAT(d.error(with_line(1, "name: [a, b]")), Contains(d.at(1, "name")) && Contains("a list"));
  CHECK_THAT(d.error(with_line(1, "name:")), Contains(d.at(1, "name")));
  CHECK_THAT(d.error(with_line(1, "name: ''")), Contains(d.at(1, "name")) && Contains("empty"));
  CHECK_THAT(d.error(with_line(2, "backend: gpu")), Contains(d.at(2, "backend")) && Contains("cuda, host"));
  CHECK_THAT(d.error(kMinimal + "op: conv\n"), Contains(d.at(6, "op")) && Contains("gemm"));
  CHECK_THAT(d.error(kMinimal + "entry: 9lives\n"), Contains(d.at(6, "entry")) && Contains("C identifier"));
  CHECK_THAT(d.error(kMinimal + "entry: run-it\n"), Contains(d.at(6, "entry")));
  CHECK_THAT(d.error(with_line(5, "compute: fp32")),
             Contains(d.at(5, "compute")) && Contains("f64, f32, tf32, f16, bf16"));
  CHECK_THAT(d.error(kMinimal + "deterministic: maybe\n"), Contains(d.at(6, "deterministic")));
  CHECK_THAT(d.error(kMinimal + "subnormals: ftz\n"), Contains(d.at(6, "subnormals")) && Contains("ieee, flush"));
  CHECK_THAT(d.error(kMinimal + "subnormals: [flush]\n"), Contains(d.at(6, "subnormals")));
  CHECK_THAT(d.error(kMinimal + "expect: great\n"), Contains(d.at(6, "expect")) && Contains("verdict"));
  CHECK_THAT(d.error(kMinimal + "flags: -O3\n"), Contains(d.at(6, "flags")) && Contains("list"));
  CHECK_THAT(d.error(kMinimal + "flags: [[-O3]]\n"), Contains(d.at(6, "flags")));
  CHECK_THAT(d.error(kMinimal + "libs:\n  - cublas\n  - cudnn\n"), Contains(d.at(8, "libs")) && Contains("cublas"));
}

TEST_CASE("spec: dtypes errors name the nested key", "[spec]") {
  SpecDir d;
  using Catch::Contains;
  CHECK_THAT(d.error(with_line(4, "dtypes: {a: f8, b: f16, c: f32}")),
             Contains(d.at(4, "dtypes.a")) && Contains("f64, f32, f16, bf16"));
  CHECK_THAT(d.error(with_line(4, "dtypes: {a: f16, b: f16}")), Contains(d.at(4, "dtypes.c")) && Contains("missing"));
  CHECK_THAT(d.error(with_line(4, "dtypes:\n  a: f16\n  b: f16\n  c: f32\n  d: f32")),
             Contains(d.at(8, "dtypes.d")) && Contains("no tensor of op 'gemm' is named 'd'"));
  CHECK_THAT(d.error(with_line(4, "dtypes:\n  a: f16\n  b: tf32\n  c: f32")), Contains(d.at(6, "dtypes.b")));
  CHECK_THAT(d.error(with_line(4, "dtypes: f16")), Contains(d.at(4, "dtypes")) && Contains("mapping"));
}

TEST_CASE("spec: source must be an existing regular file", "[spec]") {
  SpecDir d;
  using Catch::Contains;
  CHECK_THAT(d.error(with_line(3, "source: kernels/missing.cu")),
             Contains(d.at(3, "source")) && Contains("missing.cu") && Contains("not found"));
  CHECK_THAT(d.error(with_line(3, "source: kernels/folder.cu")), Contains(d.at(3, "source")));
  CHECK_THAT(d.error(with_line(3, "source: " + std::string(5000, 'x'))), Contains(d.at(3, "source")));
}

TEST_CASE("spec: bad requires name the line, column and text", "[spec]") {
  SpecDir d;
  using Catch::Contains;
  CHECK_THAT(d.error(kMinimal + "requires: \"k %\"\n"),
             Contains(d.at(6, "requires")) && Contains("column 4") && Contains("'k %'"));
  CHECK_THAT(d.error(kMinimal + "requires:\n  - k % 8 == 0\n  - aligned(Z,16)\n"),
             Contains(d.at(8, "requires")) && Contains("unknown tensor 'Z'"));
  CHECK_THAT(d.error(kMinimal + "requires: [q > 1]\n"), Contains(d.at(6, "requires")) && Contains("'q'"));
  CHECK_THAT(d.error(kMinimal + "requires: \"&&&&\"\n"), Contains(d.at(6, "requires")));
  CHECK_THAT(d.error(kMinimal + "requires: [[k]]\n"), Contains(d.at(6, "requires")));
  CHECK_THAT(d.error(kMinimal + "requires: {k: 1}\n"), Contains(d.at(6, "requires")));
  std::string deep = std::string(100, '(') + "k" + std::string(100, ')');
  CHECK_THAT(d.error(kMinimal + "requires: \"" + deep + "\"\n"), Contains(d.at(6, "requires")) && Contains("nested"));
}

TEST_CASE("spec: documents that are not a spec", "[spec]") {
  SpecDir d;
  using Catch::Contains;
  CHECK_THAT(d.error(""), Contains(d.at(1)) && Contains("empty"));
  CHECK_THAT(d.error("# nothing but a comment\n\n"), Contains(d.at(1)) && Contains("empty"));
  CHECK_THAT(d.error("- a\n- b\n"), Contains(d.at(1)) && Contains("mapping"));
  CHECK_THAT(d.error("just a string\n"), Contains(d.at(1)) && Contains("mapping"));
  CHECK_THAT(d.error(kMinimal + "---\nname: second\n"), Contains(d.at(6)) && Contains("more than one"));
  CHECK_THAT(d.error("name: x\nbackend: [cuda\ncompute: f32\n"), Contains(d.at(3)) && Contains("syntax"));
  CHECK_THAT(d.error("name: x\n  bad: indent: here\n"), Contains("spec.yaml:2: ") && Contains("syntax"));
  CHECK_THAT(d.error("? [a, b]\n: 1\n"), Contains(d.at(1)) && Contains("keys"));
  // yaml-cpp 0.7's LoadAll never returns on these (jbeder/yaml-cpp#1040).
  CHECK_THAT(d.error(","), Contains(d.at(1)) && Contains("unexpected ','"));
  CHECK_THAT(d.error("{a: 1},"), Contains(d.at(1)) && Contains("after the document"));
  CHECK_THAT(d.error(kMinimal + "---\n"), Contains(d.at(6)) && Contains("more than one"));
}

TEST_CASE("spec: hostile input gives errors and never crashes", "[spec]") {
  SpecDir d;
  using Catch::Contains;
  CHECK_THAT(d.error("name: x\nbackend: cu" + std::string(1, '\0') + "da\n"),
             Contains(d.at(2)) && Contains("NUL byte at column 12"));
  CHECK_THAT(d.error(std::string(10'000'000, 'a')), Contains("larger than 1 MiB"));
  CHECK_THAT(d.error(std::string(100'000, '[')), Contains(d.dir.string()));
  CHECK_THAT(d.error(std::string(100'000, '{')), Contains(d.dir.string()));
  std::string block;
  for (int i = 0; i < 1400; ++i) block += std::string(size_t(i), ' ') + "- \n";  // just under 1 MiB
  CHECK_THAT(d.error(block), Contains(d.dir.string()));
  CHECK_THAT(d.error("a: &x [*x]\n"), Contains(d.at(1, "a")));
  CHECK_THAT(d.error("name: &n x\nbackend: *n\n"), Contains(d.at(2, "backend")));
  CHECK_THAT(d.error("name: !!binary AAAA\n"), Contains("key 'backend'"));  // tags are just text
  CHECK_THAT(d.error(kMinimal + "name" + std::string(1000, 'x') + ": 1\n"), Contains("...'") && Contains("unknown"));
  // Random bytes over a spec-ish alphabet: only InputError may come out.
  std::mt19937_64 rng(7);
  const std::string alphabet = "name:backend: cuda[]{},-\n \"'&*!?%#|>\t\\0\x01";
  int other = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    for (int j = 0, n = int(rng() % 80); j < n; ++j) text += alphabet[rng() % alphabet.size()];
    try {
      d.parse(text);
    } catch (const InputError&) {
    } catch (...) {
      ++other;
    }
  }
  CHECK(other == 0);
}

TEST_CASE("spec: load_spec refuses what is not a readable small file", "[spec]") {
  SpecDir d;
  using Catch::Contains;
  auto load_error = [](const fs::path& p) {
    try {
      assay::load_spec(p);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK_THAT(load_error(d.dir / "absent.yaml"), Contains("absent.yaml: cannot read"));
  CHECK_THAT(load_error(d.dir / "kernels"), Contains("not a regular file"));
  d.write("big.yaml", "name: x\n# " + std::string(2 << 20, 'x') + "\n");
  CHECK_THAT(load_error(d.dir / "big.yaml"), Contains("big.yaml: larger than 1 MiB"));
  d.write("empty.yaml", "");
  CHECK_THAT(load_error(d.dir / "empty.yaml"), Contains("empty.yaml:1: ") && Contains("empty"));
}
