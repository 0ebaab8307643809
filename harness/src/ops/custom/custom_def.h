// `op: custom`: an op the spec declares itself (docs/ops/custom.md). This is
// the declaration as read from the spec: named sizes with their ranges,
// tensors (name, role, dtype, shape as expressions over the sizes), scalars,
// the reference source and the tolerance; and the helpers every other part
// of the op builds cases with (shapes from sizes, layouts).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "case/case.h"
#include "spec/requires.h"
#include "spec/spec.h"

namespace assay::custom {

struct SizeDef {
  std::string name;
  int64_t min = 0, max = 0;  // inclusive
};

struct TensorDef {
  std::string name;
  Role role = Role::input;
  DType dtype = DType::f32;       // the tensor's own, or the spec's `dtypes:` override
  std::vector<Requirement> shape;  // one expression over the sizes per dimension
};

struct ScalarDef {
  std::string name;
  bool listed = false;         // values: ... (else range: [lo, hi])
  double lo = 0, hi = 0;
  std::vector<double> values;
  // The values the sweep rotates through: lo, hi, 0 and 1 where inside, the
  // midpoint (or the listed values).
  std::vector<double> candidates() const;
};

enum class ToleranceForm { ulps, relative, same_precision };

struct ToleranceDef {
  ToleranceForm form = ToleranceForm::ulps;
  double ulps = 0;       // ulps: N
  double relative = 0;   // relative: r
  double absolute = 0;   // relative and same_precision: a
  double factor = 0;     // vs_same_precision: k
};

struct Def {
  std::vector<SizeDef> sizes;
  std::vector<TensorDef> tensors;  // ABI order: inputs, then outputs (output or inout)
  std::vector<ScalarDef> scalars;
  std::filesystem::path reference;  // absolute
  ToleranceDef tolerance;
  int num_inputs = 0;

  int size_index(std::string_view name) const;  // -1 when absent
  bool in_range(std::span<const int64_t> sizes) const;
  std::vector<int64_t> clamped(std::span<const int64_t> sizes) const;
  // Tensor t's shape for these sizes; nullopt where an expression is not an
  // integer in [0, 2^31].
  std::optional<std::vector<int64_t>> shape(int t, std::span<const int64_t> sizes) const;
};

// Reads and checks the op's keys (sizes, tensors, scalars, reference,
// tolerance; dtypes overrides). Throws InputError "FILE:LINE: key 'X': ...".
Def parse_def(const Spec& spec);

// A tensor's layout the way cases are built: orientation (column-major: the
// innermost two dimensions transposed; only for 2-D and up), padding beyond
// each row (column, when column-major), base offset in elements. A 1-D tensor
// "padded" by p gets the element stride 1 + ceil(p / n) (its gaps add up to at
// least p), so that the shrinker's reading of padding (row stride - columns)
// gives the layout back.
struct LayoutParts {
  bool col_major = false;
  int64_t pad = 0, offset = 0;
};
// Sets t.strides and t.offset from t.shape and l.
void lay_out(CaseTensor& t, const LayoutParts& l);
LayoutParts layout_parts(const CaseTensor& t);

// The case for these sizes, layouts (one per tensor) and scalars; nullopt
// where a shape expression has no valid value. keep: each tensor's keep from
// `like` where given (resize).
std::optional<Case> make_case(const Def& def, std::span<const int64_t> sizes, std::span<const LayoutParts> layouts,
                              std::span<const double> scalars, Recipe recipe, uint64_t seed, std::string origin,
                              const Case* like = nullptr);

std::vector<int64_t> sizes_of(const Case& c);
std::vector<double> scalars_of(const Case& c);
std::vector<LayoutParts> layouts_of(const Case& c);

}  // namespace assay::custom
