// A Case is the unit everything passes around (like benchdnn's problem
// descriptor): plain data that regenerates the inputs bit for bit, prints as
// a repro line that reads back (parse_repro), and saves as a small YAML file.
// It is op-generic: an op, named sizes, tensors with roles and N-D layouts,
// scalars, a value recipe and a seed. What the sizes mean, which tensors an
// op has and how their shapes follow from the sizes is the op's
// (ops/<op>/, through ops/op.h); nothing here knows any op.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "case/values.h"
#include "core/dtype.h"
#include "core/tensor_geom.h"

namespace assay {

// input: read only; output: written, poisoned before the call; inout: an
// output holding an initial value the kernel may read (GEMM's C with beta != 0).
enum class Role : uint8_t { input, output, inout };
std::string_view name(Role r);
std::optional<Role> parse_role(std::string_view s);

struct CaseTensor {
  std::string name;
  Role role = Role::input;
  DType dtype = DType::f32;
  std::vector<int64_t> shape, strides;  // elements; the same length, at most TensorGeom::kMaxDims
  int64_t offset = 0;                   // elements from the buffer's data start
  Keep keep;                            // which elements stay nonzero (the shrinker's cut)

  TensorGeom geom() const;
};
// Written out: this header is also compiled as C++17 by nvcc (no "= default").
inline bool operator==(const CaseTensor& a, const CaseTensor& b) {
  return a.name == b.name && a.role == b.role && a.dtype == b.dtype && a.shape == b.shape &&
         a.strides == b.strides && a.offset == b.offset && a.keep == b.keep;
}

template <class T>
struct Named {
  std::string name;
  T value{};
  bool operator==(const Named& o) const { return name == o.name && value == o.value; }
};

// A bench shape (assay bench): values of an op's sizes by name, from a
// spec's `bench:` list, a --shapes file, or the op's defaults.
using BenchShape = std::vector<Named<int64_t>>;

struct Case {
  std::string op;
  std::vector<Named<int64_t>> sizes;   // in the op's order, e.g. m, n, k
  std::vector<CaseTensor> tensors;     // ABI order: inputs, then outputs
  std::vector<Named<double>> scalars;  // ABI order
  Recipe recipe = Recipe::uniform;
  uint64_t seed = 0;
  std::string origin;  // the generator rule that produced it, for humans

  // Lookups by name; size() and scalar() throw std::out_of_range when absent.
  int64_t size(std::string_view name) const;
  double scalar(std::string_view name) const;
  int64_t* find_size(std::string_view name);
  double* find_scalar(std::string_view name);
  int tensor_index(std::string_view name) const;  // -1 when absent
  const CaseTensor& tensor(std::string_view name) const;
  CaseTensor& tensor(std::string_view name);
  TensorGeom geom(int i) const { return tensors[size_t(i)].geom(); }
  int num_inputs() const;  // tensors before the first output
};
inline bool operator==(const Case& a, const Case& b) {
  return a.op == b.op && a.sizes == b.sizes && a.tensors == b.tensors && a.scalars == b.scalars &&
         a.recipe == b.recipe && a.seed == b.seed && a.origin == b.origin;
}

// One line that says everything and reads back (parse_repro):
// "gemm m=3 n=65 k=8 A=f16[3,8:8,1] B=f32[8,65:1,8]+1 C=f32[3,65:65,1]/inout alpha=1 beta=0 ints seed=7".
std::string describe(const Case& c);
// Throws InputError on a line describe() could not have written.
Case parse_repro(std::string_view line);

// The version to_yaml writes.
inline constexpr int kCaseFileVersion = 2;

// Case files older than the generic case hold one op's own keys: that op
// registers how to read them (the `spec`, `recipe`, `seed` and `origin` keys
// are read here). Throws InputError as load_case_file does.
// Elements share memory only through a broadcast (stride-0) dimension, and
// only in an input: an output has one value per element, and a fill or a
// kernel's writes to shared memory would race. Throws InputError naming the
// tensor (a case file's layouts, before anything runs).
void check_layouts(const Case& c);

namespace yaml_input { class Fields; struct Field; }
using LegacyCaseReader = std::function<Case(const yaml_input::Fields& top)>;
bool register_legacy_case_reader(int version, LegacyCaseReader reader);
// A `keep` entry: {lo, hi} or a list of [row, col] positions.
Keep read_keep(const yaml_input::Fields& parent, const yaml_input::Field& f);

// YAML round trip. `spec_path` (optional) is written relative to the case file.
std::string to_yaml(const Case& c, const std::filesystem::path& spec_path = {},
                    const std::filesystem::path& case_dir = {});
struct LoadedCase {
  Case c;
  std::filesystem::path spec;  // resolved against the case file's folder; empty if absent
};
// Throws InputError naming file, line and key on anything malformed. Version
// 1 files (GEMM's own keys, written before the generic case) are migrated:
// docs/cases.md, "Case files", gives the rule.
LoadedCase load_case_file(const std::filesystem::path& file);
LoadedCase parse_case_yaml(const std::string& text, const std::string& origin_name,
                           const std::filesystem::path& base_dir = {});

}  // namespace assay
