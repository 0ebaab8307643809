// A spec says what a candidate kernel is and what it claims: where its source
// is, which backend runs it, its dtypes and compute precision, and the
// preconditions inside which it must be correct.
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "case/case.h"
#include "core/dtype.h"
#include "spec/requires.h"

namespace assay {

class Op;

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
  std::string op;  // empty: the default op (ops/op.h, default_op_name), for specs written before there were several
  BackendKind backend = BackendKind::host;
  std::filesystem::path source;  // absolute, resolved against the spec's folder
  std::string entry = "assay_run";
  // Per tensor name, as written (`dtypes: {x: f16, y: f16}`); names match
  // the op's tensors without regard to case (GEMM's a, b, c are A, B, C).
  std::vector<Named<DType>> dtypes;
  Compute compute = Compute::f32;
  Subnormals subnormals = Subnormals::ieee;
  std::vector<Requirement> requires_;
  bool deterministic = true;
  std::string expect;               // empty, "pass", or a verdict name
  std::vector<std::string> flags;   // extra compiler flags
  std::vector<std::string> libs;    // extra libraries to link, e.g. "cublas"
  // assay bench (docs/bench.md): the shapes to time, and the verdict a
  // planted cheat expects there (empty: none).
  std::vector<BenchShape> bench;
  std::string bench_expect;
  // The whole file, for the op's own keys (softmax's `math`, custom's
  // `tensors`); the op reads and checks them when it is made.
  YAML::Node yaml;
  std::shared_ptr<const Op> impl;   // the op, made by load_spec/parse_spec (ops/op.h, op_of)

  // The dtype given for tensor `name`; nullopt when none.
  std::optional<DType> dtype(std::string_view name) const;
  // ... or `fallback`.
  DType dtype_or(std::string_view name, DType fallback) const { return dtype(name).value_or(fallback); }
  void set_dtype(std::string_view name, DType t);
};

// The keys every spec may have, whatever its op.
inline constexpr std::string_view kGenericSpecKeys[] = {
    "name", "op", "backend", "source", "entry", "dtypes", "compute", "subnormals", "requires",
    "deterministic", "expect", "flags", "libs", "bench", "bench_expect"};

// Reads and validates a spec. Throws InputError "FILE:LINE: key 'X': problem"
// for unknown keys, wrong types, missing files and bad expressions.
Spec load_spec(const std::filesystem::path& file);
// The spec files named on a command line: files as given (a missing one is
// the loader's to report), folders searched for *.yaml / *.yml, sorted.
// Throws InputError for a folder without any.
std::vector<std::filesystem::path> collect_spec_files(const std::vector<std::string>& paths);
Spec parse_spec(const std::string& yaml_text, const std::filesystem::path& file);

}  // namespace assay
