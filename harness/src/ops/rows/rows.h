// What every row-wise op shares (softmax, layernorm, rmsnorm, reduce, unary):
// sizes {rows, n} or {b, rows, n}; tensors laid out as [b?, rows, n] (one
// value per element), [b?, rows] (one value per row: statistics, reductions)
// or [n] (one value per column: weight, bias, possibly broadcast with stride
// 0); layouts that break real kernels (transposed, padded, offset, gaps
// between batches); the reference's blocks of whole rows; the sweep's
// sectioned, de-duplicated case lists; fitting a case to the spec's
// `requires`; random shapes and layouts. An op folder builds its tensor
// convention from these pieces and keeps only what is its own.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "case/case.h"
#include "ops/op.h"
#include "spec/spec.h"

namespace assay::rows {

// ---- shape ----

// {rows, n} (2-D) or {b, rows, n} (batched, 3-D). The matrix view
// (core/tensor_geom.h) has b * rows rows of n elements either way.
struct Shape {
  bool batched = false;
  int64_t b = 1, rows = 0, n = 0;  // b: 1 when not batched
  int64_t total_rows() const { return (batched ? b : 1) * rows; }
  double elements() const { return double(total_rows()) * double(n); }
  bool operator==(const Shape&) const = default;
};
// The case's sizes as a shape; throws InputError naming the case otherwise.
Shape shape_of(const Case& c);
std::vector<Named<int64_t>> sizes_of(const Shape& s);
// `requires` variables: b (1 for 2-D cases), rows, n.
std::optional<double> variable(const Shape& s, std::string_view name);
bool is_size_name(std::string_view name);

// ---- layouts ----

// A tensor's layout relative to its shape: the last dimension unit-stride
// (row-major) or the innermost two transposed (column-major: rows are then
// strided, the last-dim stride is rows + pad); padding beyond the rows'
// (row-major) or columns' (column-major) extent; the base offset; for 3-D
// tensors, the gap between batches beyond the inner matrix's span.
// For a per-row tensor ([b?, rows]) pad is the gap between rows (stride
// 1 + pad) and col_major is ignored; for a per-column tensor ([n]) pad is the
// gap between elements, and `broadcast` gives stride 0 (one value for all).
struct Layout {
  bool col_major = false;
  int64_t pad = 0, offset = 0, batch_gap = 0;
  bool broadcast = false;
  bool operator==(const Layout&) const = default;
};
Layout transposed(int64_t pad = 0, int64_t offset = 0);
Layout padded(int64_t pad, int64_t offset = 0);
// The same orientation without padding, offset or gaps.
Layout plain_like(const Layout& l);

// [b?, rows, n]
CaseTensor element_tensor(const char* name, Role role, DType t, const Shape& s, const Layout& l);
// [b?, rows]
CaseTensor row_tensor(const char* name, Role role, DType t, const Shape& s, const Layout& l);
// [n]
CaseTensor column_tensor(const char* name, Role role, DType t, const Shape& s, const Layout& l);

enum class Kind : uint8_t { element, row, column };
// The layout a tensor of that kind has (approximate for hand-written strides).
Layout layout_of(const CaseTensor& t, const Shape& s, Kind kind);
// The shape a tensor of that kind must have.
std::vector<int64_t> expected_shape(const Shape& s, Kind kind);

// Throws InputError unless the case has exactly these tensors, in order,
// with these roles, kinds (shapes from sizes) and one stride per dimension,
// and `scalar_names` as its scalars (any values).
struct TensorRule {
  const char* name;
  Role role;
  Kind kind;
};
void validate_tensors(const Case& c, std::span<const TensorRule> rules, std::span<const char* const> scalar_names);

// ---- blocks of rows (references hand results over block by block) ----

// Elements of one block (at least one row).
inline constexpr int64_t kBlockElements = int64_t(1) << 22;
// Matrix-view rows [row0, row0 + rows): whole batches where a batch fits a
// block, else pieces of one batch (so each block has one geometry).
struct RowBlock {
  int64_t row0, rows;
};
std::vector<RowBlock> row_blocks(const Shape& s);
// The most elements a block holds (for memory estimates).
double block_elements(const Shape& s);
// The geometry of a block's rows of an element ([b?, rows, n]) or per-row
// ([b?, rows]) tensor of shape s.
TensorGeom block_geom(const TensorGeom& g, const Shape& s, const RowBlock& b);

// ---- costs ----

// Bytes of one tensor's buffer with its guard zones.
double buffer_bytes(const TensorGeom& g);
// The buffers of a case's inputs (Role::input), or of its other tensors.
double role_bytes(const Case& c, Role role);
// Device bytes of a case: each tensor live and as handed, plus `per_element`
// bytes a block element for the reference (e.g. 16: ref and bound in f64).
double case_bytes(const Case& c, double per_element);
// Host bytes: the executor's images of outputs and changed inputs, the
// reference's block, and on the host backend the buffers themselves.
double host_bytes(const Case& c, BackendKind backend, double per_element);

// ---- sweeps ----

// Row lengths that break real kernels: around warp (32), block (128, 1024)
// and tile (4096) sizes; and past 2^16 (16-bit lengths and index math).
inline constexpr int64_t kRowLengths[] = {1, 2, 3, 31, 32, 33, 127, 128, 129, 1023, 1024, 1025, 4095, 4097};
inline constexpr int64_t kPastWord = 70001;

// Cases made in sections (row lengths, row counts, recipes, layouts, ...),
// each case fitted to the spec's requires, seeded, de-duplicated; the gate
// sees them interleaved (one of each section in turn), so a short budget
// still touches every section.
class SweepBuilder {
 public:
  // fit: the op's fit_requires (nullopt drops the case).
  SweepBuilder(uint64_t seed, std::function<std::optional<Case>(const Case&)> fit);
  void section();
  void add(const Case& c);
  size_t made() const { return made_; }
  std::vector<Case> interleaved() const;

 private:
  uint64_t seed_;
  std::function<std::optional<Case>(const Case&)> fit_;
  std::vector<std::vector<Case>> sections_;
  std::set<std::string> seen_;
  size_t made_ = 0;
};

// The case itself if the spec's requires hold on it (in the op's context), else
// the nearest variant: layouts relaxed (relax 1: same orientation, no pad,
// offset or gaps; 2: all row-major plain; 3: all column-major plain), then
// sizes rounded up to multiples, then halved, then a batched case flattened
// to 2-D; nullopt if none. remake(shape, relax) builds the op's case with
// another shape and relaxed layouts (relax 0: the case's own).
using Remake = std::function<Case(const Shape& s, int relax)>;
using ContextOf = std::function<std::unique_ptr<EvalContext>(const Case& c)>;
std::optional<Case> fit_requires(const Spec& spec, const Case& c, const ContextOf& context, const Remake& remake);

// Random shapes and layouts for random_case: dimensions mostly small, often
// powers of two and neighbours, now and then up to lim.max_random_dim; the
// elements held under lim.max_random_work and n under max_n.
class RandomDraw {
 public:
  RandomDraw(uint64_t seed, uint64_t salt, uint64_t index);
  uint64_t next();
  int64_t dim(const GenLimits& lim);
  Shape shape(const GenLimits& lim, int64_t max_n);
  Layout layout(const Shape& s);
  Recipe recipe(std::span<const Recipe> from);

 private:
  uint64_t state_;
};

}  // namespace assay::rows
