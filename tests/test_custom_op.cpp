// op: custom (docs/ops/custom.md): the spec's own keys and their errors, shape
// expressions, the user's reference, and every host sample kernel's verdict.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <set>

#include <unistd.h>

#include "core/error.h"
#include "ops/op.h"
#include "samples_support.h"
#include "zoo_checks.h"

using namespace assay;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

using testing::source_root;

// A folder with a candidate, the cumsum reference and a spec built from `body`.
struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / ("assay-custom-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::create_directories(dir);
    write("kernel.cpp", "#include <assay/abi.h>\nextern \"C\" int assay_run(const assay_call*) { return 1; }\n");
    fs::copy_file(source_root() / "generated_kernels/custom/ref/cumsum_ref.cpp", dir / "ref.cpp",
                  fs::copy_options::overwrite_existing);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  static int& counter() {
    static int n = 0;
    return n;
  }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir / name) << text; }
  Spec spec(const std::string& body) const {
    write("spec.yaml", body);
    return load_spec(dir / "spec.yaml");
  }
};

const char* kHead =
    "name: t\n"
    "op: custom\n"
    "backend: host\n"
    "source: kernel.cpp\n"
    "compute: f32\n";

std::string cumsum_spec(const std::string& tolerance = "{relative: 1.0e-4, absolute: 2.0e-3}",
                        const std::string& reference = "ref.cpp") {
  return std::string(kHead) + "reference: " + reference +
         "\n"
         "sizes:\n"
         "  rows: [1, 64]\n"
         "  n: [1, 300]\n"
         "tensors:\n"
         "  - {name: x, role: input, dtype: f32, shape: [rows, n]}\n"
         "  - {name: y, role: output, dtype: f32, shape: [rows, n]}\n"
         "tolerance: " +
         tolerance + "\n";
}

}  // namespace

TEST_CASE("custom spec: the op's keys are read and checked with FILE:LINE errors", "[custom]") {
  Scratch s;
  SECTION("a good spec") {
    Spec spec = s.spec(cumsum_spec());
    CHECK(spec.op == "custom");
    CHECK(op_of(spec).name() == "custom");
  }
  SECTION("missing reference") {
    std::string text = cumsum_spec();
    text.erase(text.find("reference: ref.cpp\n"), std::string("reference: ref.cpp\n").size());
    CHECK_THROWS_WITH(s.spec(text), Contains("key 'reference': missing (required)"));
  }
  SECTION("reference file not found") {
    CHECK_THROWS_WITH(s.spec(cumsum_spec("{ulps: 4}", "nowhere.cpp")),
                      Contains("spec.yaml:6: key 'reference': reference file 'nowhere.cpp' not found"));
  }
  SECTION("bad tolerance forms") {
    for (const char* bad : {"{ulps: 2, relative: 1.0e-3}", "{relative: 1.0e-4}", "{ulps: 2, absolute: 1}",
                            "{vs_same_precision: 3}", "{}", "3"})
      CHECK_THROWS_WITH(s.spec(cumsum_spec(bad)), Contains("key 'tolerance'"));
    CHECK_THROWS_WITH(s.spec(cumsum_spec("{ulps: -1}")), Contains("key 'tolerance.ulps': must be positive"));
    CHECK_THROWS_WITH(s.spec(cumsum_spec("{relative: 1.0e-4, absolute: -1}")),
                      Contains("key 'tolerance.absolute': must not be negative"));
    CHECK_THROWS_WITH(s.spec(cumsum_spec("{ulp: 2}")), Contains("unknown key"));
  }
  SECTION("unknown size in a shape") {
    std::string text = cumsum_spec();
    text.replace(text.find("shape: [rows, n]}"), std::string("shape: [rows, n]}").size(), "shape: [rows, m]}");
    CHECK_THROWS_WITH(s.spec(text), Contains("spec.yaml:11: key 'tensors[0].shape[1]': unknown variable 'm'"));
  }
  SECTION("inputs after outputs") {
    std::string text = std::string(kHead) +
                       "reference: ref.cpp\n"
                       "sizes: {n: [1, 8]}\n"
                       "tensors:\n"
                       "  - {name: y, role: output, dtype: f32, shape: [n]}\n"
                       "  - {name: x, role: input, dtype: f32, shape: [n]}\n"
                       "tolerance: {ulps: 1}\n";
    CHECK_THROWS_WITH(s.spec(text), Contains("input 'x' comes after output 'y'"));
  }
  SECTION("sizes, names, scalars and dtypes") {
    std::string text = cumsum_spec();
    CHECK_THROWS_WITH(s.spec(text + "scalars: [{name: alpha}]\n"),
                      Contains("give exactly one of range: [lo, hi] and values: [...]"));
    CHECK_THROWS_WITH(s.spec(text + "scalars: [{name: n, values: [1]}]\n"), Contains("name 'n' is used twice"));
    CHECK_THROWS_WITH(s.spec(text + "dtypes: {z: f16}\n"), Contains("no tensor of this op is named 'z'"));
    CHECK_THROWS_WITH(s.spec(text + "math: fast\n"), Contains("key 'math': unknown key"));
    std::string range = text;
    range.replace(range.find("rows: [1, 64]"), std::string("rows: [1, 64]").size(), "rows: [9, 3]");
    CHECK_THROWS_WITH(s.spec(range), Contains("key 'sizes.rows': min 9 is above max 3"));
    // requires name the sizes, scalars and tensors
    CHECK_NOTHROW(s.spec(text + "scalars: [{name: alpha, range: [-1, 1]}]\nrequires: [\"rows <= n && alpha < 2 && row_major(x)\"]\n"));
    CHECK_THROWS_WITH(s.spec(text + "requires: [\"k > 1\"]\n"), Contains("unknown variable 'k'"));
    // dtypes override the tensors' own
    Spec f16 = s.spec(text + "dtypes: {y: f16}\n");
    auto c = op_of(f16).sweep(f16, 1, SweepTarget{BackendKind::host, 1e12});
    REQUIRE_FALSE(c.empty());
    CHECK(c[0].tensor("y").dtype == DType::f16);
    CHECK(c[0].tensor("x").dtype == DType::f32);
  }
  SECTION("a reference that does not compile is a setup error with the compiler's message") {
    s.write("broken.cpp", "#include <assay/abi.h>\nextern \"C\" int assay_run(const assay_call*) { return nope; }\n");
    CHECK_THROWS_WITH(s.spec(cumsum_spec("{ulps: 1}", "broken.cpp")),
                      Contains("key 'reference'") && Contains("nope"));
  }
}

TEST_CASE("custom spec: shapes are expressions over the sizes", "[custom]") {
  Scratch s;
  const std::string text = std::string(kHead) +
                           "reference: ref.cpp\n"
                           "sizes:\n"
                           "  b: [1, 4]\n"
                           "  n: [2, 40]\n"
                           "tensors:\n"
                           "  - {name: x, role: input, dtype: f32, shape: [b, n, 2*n]}\n"
                           "  - {name: half, role: input, dtype: f32, shape: [n / 2]}\n"
                           "  - {name: s, role: input, dtype: f32, shape: []}\n"
                           "  - {name: y, role: output, dtype: f32, shape: [b*n]}\n"
                           "tolerance: {ulps: 1}\n"
                           "requires: [\"n % 2 == 0\"]\n";
  Spec spec = s.spec(text);
  const Op& op = op_of(spec);
  const auto cases = op.sweep(spec, 7, SweepTarget{BackendKind::host, 1e12});
  REQUIRE(cases.size() > 10);
  std::set<int64_t> ns;
  bool padded = false, col_major = false;
  for (const Case& c : cases) {
    INFO(describe(c));
    const int64_t b = c.size("b"), n = c.size("n");
    ns.insert(n);
    CHECK(n % 2 == 0);  // n / 2 is an integer only there, and requires says so too
    CHECK(b >= 1);
    CHECK(b <= 4);
    CHECK(c.tensor("x").shape == std::vector<int64_t>{b, n, 2 * n});
    CHECK(c.tensor("half").shape == std::vector<int64_t>{n / 2});
    CHECK(c.tensor("s").shape.empty());
    CHECK(c.tensor("y").shape == std::vector<int64_t>{b * n});
    CHECK_NOTHROW(op.validate(c));
    const TensorGeom g = c.geom(c.tensor_index("x"));
    padded |= g.row_major() && !g.contiguous();
    col_major |= g.col_major() && !g.row_major();
  }
  CHECK(ns.count(2));
  CHECK(ns.count(40));
  CHECK(ns.count(32));
  CHECK(padded);
  CHECK(col_major);
  // resize recomputes the shapes and keeps the layouts' orientation
  Case c = cases.front();
  Case r = op.resize(c, std::vector<int64_t>{3, 10}, true);
  CHECK(r.tensor("x").shape == std::vector<int64_t>{3, 10, 20});
  CHECK(r.tensor("y").shape == std::vector<int64_t>{30});
  CHECK_NOTHROW(op.validate(r));
  // sizes outside their ranges are clamped into them
  Case low = op.resize(c, std::vector<int64_t>{0, 0}, true);
  CHECK(low.size("b") == 1);
  CHECK(low.size("n") == 2);
  // a case whose shapes disagree with the expressions is refused
  Case wrong = r;
  wrong.tensor("y").shape = {31};
  CHECK_THROWS_AS(op.validate(wrong), InputError);
  // random and fuzz cases stay inside the spec too
  for (uint64_t i = 0; i < 50; ++i) {
    auto x = op.random_case(spec, 3, i, GenLimits{});
    if (x) CHECK(x->size("n") % 2 == 0);
    uint8_t bytes[32];
    for (int k = 0; k < 32; ++k) bytes[k] = uint8_t(mix64(i * 32 + k));
    Case f = op.decode(bytes, sizeof bytes, spec, CodecLimits{});
    CHECK_NOTHROW(op.validate(f));
    CHECK(op.decode(op.encode(f, CodecLimits{}).data(), op.encode(f, CodecLimits{}).size(), spec, CodecLimits{}).sizes ==
          f.sizes);
  }
}

TEST_CASE("custom op: the FP64 reference runs on the widened inputs", "[custom]") {
  Scratch s;
  Spec spec = s.spec(cumsum_spec());
  const Op& op = op_of(spec);
  auto backend = make_backend(BackendKind::host);
  Case c = op.sweep(spec, 1, SweepTarget{BackendKind::host, 1e12}).front();
  c = op.resize(c, std::vector<int64_t>{2, 5}, false);
  c.recipe = Recipe::ints;
  const TensorGeom g = c.geom(0);
  Buffer x = backend->allocate(size_t(g.span()) * 4);
  backend->fill_tensor(x, g, op.recipe_params(c, 0), c.seed, 0);
  const std::byte* device[2] = {x.data, nullptr};
  auto ref = op.reference(*backend, c, device);
  REQUIRE(ref.size() == 2);
  CHECK(ref[0].empty());
  REQUIRE(ref[1].size() == 10);
  for (int64_t r = 0; r < 2; ++r) {
    double sum = 0;
    for (int64_t j = 0; j < 5; ++j) {
      sum += decode(DType::f32, load_bits(DType::f32, x.data + g.index(r, j) * 4));
      CHECK(ref[1][size_t(r * 5 + j)] == sum);
    }
  }
  // A reference that returns nonzero is an infrastructure error naming it.
  s.write("fails.cpp", "#include <assay/abi.h>\nextern \"C\" int assay_run(const assay_call*) { return 7; }\n");
  Spec failing = s.spec(cumsum_spec("{ulps: 1}", "fails.cpp"));
  CHECK_THROWS_WITH(op_of(failing).reference(*backend, c, device), Contains("fails.cpp") && Contains("returned 7"));
  backend->release(x);
}

TEST_CASE("host custom sample kernels get their expected verdicts", "[custom][samples]") {
  auto opt = testing::sample_gate_options(60);
  opt.shrink_attempts = 0;
  CHECK(testing::check_host_zoo("custom", opt, 10, 50).planted >= 8);
}
