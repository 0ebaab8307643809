// The softmax family's tensor convention under the ABI (docs/ops/softmax.md):
// one input x and one output y of the same shape, the reduction along the
// last dimension, no scalars. Sizes are {rows, n} (x [rows, n]) or
// {b, rows, n} (x [b, rows, n]); the matrix view (core/tensor_geom.h) has
// b * rows rows of n elements either way. Everything else in ops/softmax
// builds on these few functions.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "case/case.h"
#include "ops/rows/rows.h"
#include "spec/requires.h"
#include "spec/spec.h"

namespace assay::softmax {

enum Tensor : int { X = 0, Y = 1 };

// What the op claims besides the generic spec keys.
enum class Math : uint8_t { ieee, cuda, fast };
struct Settings {
  bool log = false;         // log_softmax
  Math math = Math::ieee;   // the exp/log the kernel uses (docs/tolerance.md)
  bool empty_zero = false;  // `empty_rows: zero`: an all -inf row gives 0 (log: -inf), not NaN
};
std::string_view op_name(bool log);
// The settings of a spec (its `math` and `empty_rows` keys; defaults for a
// spec built in code). Throws InputError "FILE:LINE: key 'X': ..." for bad
// values, a compute of tf32 and missing dtypes.
Settings read_settings(const Spec& spec, bool log);

// Shapes ({rows, n} or {b, rows, n}) and layouts are the row-wise ops' own
// (ops/rows/rows.h): x and y are element tensors.
using rows::Layout;
using rows::Shape;
using rows::shape_of;
// The layout a tensor of the case has (approximate for hand-written strides).
Layout layout_of(const Case& c, int tensor);

struct Parts {  // everything a case is made of
  bool log = false;
  Shape shape;
  DType x_type = DType::f32, y_type = DType::f32;
  Layout x, y;
  Recipe recipe = Recipe::uniform;
  uint64_t seed = 0;
  Keep keep;  // x's
  std::string origin;
};
Case make_case(const Parts& p);
Parts parts_of(const Case& c);

// Throws InputError saying what is not right (names, roles, shapes from sizes).
void validate_case(const Case& c);
// The spec's dtypes of x and y (f32 where a spec built in code gives none).
std::pair<DType, DType> spec_dtypes(const Spec& spec);

// Parts with the spec's dtypes and plain layouts.
Parts plain_parts(const Spec& spec, bool log, Shape s, std::string origin);

// Lets `requires` see b (1 for 2-D cases), rows, n and tensors x, y.
class Context final : public EvalContext {
 public:
  explicit Context(const Case& c);
  std::optional<double> variable(std::string_view name) const override;
  std::optional<TensorGeom> tensor(std::string_view name) const override;

 private:
  Shape s_;
  TensorGeom x_, y_;
};
struct Names final : EvalContext {
  std::optional<double> variable(std::string_view n) const override;
  std::optional<TensorGeom> tensor(std::string_view n) const override;
};

}  // namespace assay::softmax
