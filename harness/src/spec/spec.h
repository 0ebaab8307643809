// A spec says what a candidate kernel is and what it claims: where its source
// is, which backend runs it, its dtypes and compute precision, and the
// preconditions inside which it must be correct.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "spec/requires.h"

namespace assay {

enum class BackendKind { cuda, host };
std::string_view name(BackendKind b);

// What the kernel's arithmetic does below the smallest normal number:
// `ieee` keeps subnormals; `flush` may turn subnormal inputs, partial results
// and outputs into zero of the same sign (fast-math, -ftz=true, PTX float
// atomics). docs/tolerance.md says how `flush` widens the tolerance.
enum class Subnormals { ieee, flush };

struct Spec {
  std::filesystem::path file;    // the spec itself
  std::string name;
  std::string op = "gemm";
  BackendKind backend = BackendKind::host;
  std::filesystem::path source;  // absolute, resolved against the spec's folder
  std::string entry = "assay_run";
  DType a = DType::f32, b = DType::f32, c = DType::f32;
  Compute compute = Compute::f32;
  Subnormals subnormals = Subnormals::ieee;
  std::vector<Requirement> requires_;
  bool deterministic = true;
  std::string expect;               // empty, "pass", or a verdict name
  std::vector<std::string> flags;   // extra compiler flags
  std::vector<std::string> libs;    // extra libraries to link, e.g. "cublas"
};

// Reads and validates a spec. Throws InputError "FILE:LINE: key 'X': problem"
// for unknown keys, wrong types, missing files and bad expressions.
Spec load_spec(const std::filesystem::path& file);
// The spec files named on a command line: files as given (a missing one is
// the loader's to report), folders searched for *.yaml / *.yml, sorted.
// Throws InputError for a folder without any.
std::vector<std::filesystem::path> collect_spec_files(const std::vector<std::string>& paths);
Spec parse_spec(const std::string& yaml_text, const std::filesystem::path& file);

}  // namespace assay
