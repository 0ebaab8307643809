// A Case is the unit everything passes around (like benchdnn's problem
// descriptor): plain data that regenerates the inputs bit for bit, prints as
// a repro line and saves as a small YAML file.
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>

#include "case/values.h"
#include "core/dtype.h"

namespace assay {

struct Layout {  // strides and base offset of one tensor, in elements
  int64_t row_stride = 0, col_stride = 1, offset = 0;
  bool operator==(const Layout&) const = default;
};

struct Case {
  std::string op = "gemm";
  int64_t m = 0, n = 0, k = 0;
  DType a_type = DType::f32, b_type = DType::f32, c_type = DType::f32;
  Layout a, b, c;
  double alpha = 1.0, beta = 0.0;
  Recipe recipe = Recipe::uniform;
  uint64_t seed = 0;
  std::array<Keep, 3> keep{};  // per input tensor (A, B, C0): which elements stay nonzero
  std::string origin;  // the generator rule that produced it, for humans

  bool operator==(const Case&) const = default;
};

// Short one-line description: "gemm m=3 n=65 k=8 A=f16[row ld=8 +1] ... alpha=1 beta=0 ints seed=7".
std::string describe(const Case& c);

// YAML round trip. `spec_path` (optional) is written relative to the case file.
std::string to_yaml(const Case& c, const std::filesystem::path& spec_path = {},
                    const std::filesystem::path& case_dir = {});
struct LoadedCase {
  Case c;
  std::filesystem::path spec;  // resolved against the case file's folder; empty if absent
};
// Throws InputError naming file, line and key on anything malformed.
LoadedCase load_case_file(const std::filesystem::path& file);
LoadedCase parse_case_yaml(const std::string& text, const std::string& origin_name,
                           const std::filesystem::path& base_dir = {});

}  // namespace assay
