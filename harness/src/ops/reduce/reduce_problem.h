// The reduce family's tensor convention under the ABI (docs/ops/reduce.md):
// one input x [rows, n] or [b, rows, n], one output y [rows] or [b, rows]
// (one value per row), the reduction along the last dimension, no scalars.
// Shapes, layouts and blocks of rows come from ops/rows; this file holds
// what is reduce's own: the spec's claims, the typed view of a case and its
// checks.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "case/case.h"
#include "ops/reduce/reduce_math.h"
#include "ops/rows/rows.h"
#include "spec/requires.h"
#include "spec/spec.h"

namespace assay::reduce {

enum Tensor : int { X = 0, Y = 1 };

// What the spec claims besides the generic keys.
struct Settings {
  Reduction op = Reduction::sum;
  bool propagate = false;  // `nan: propagate`
  bool ties_any = false;   // `ties: any`
};
std::string_view name(Reduction r);
// The settings of a spec (`reduce`, `nan`, `ties`; a spec built in code:
// `reduce` defaults to sum). Throws InputError "FILE:LINE: key 'X': ..."
// for bad values, keys that do not apply to the reduction, tf32, and y
// dtypes that do not fit (arg-reductions: i64; others: a float type).
Settings read_settings(const Spec& spec);

struct Parts {  // everything a case is made of
  rows::Shape shape;
  DType x_type = DType::f32, y_type = DType::f32;
  rows::Layout x, y;
  Recipe recipe = Recipe::uniform;
  uint64_t seed = 0;
  Keep keep;  // x's
  std::string origin;
};
Case make_case(const Parts& p);
Parts parts_of(const Case& c);

// Throws InputError saying what is not right: names, roles, shapes from the
// sizes, y's dtype for the reduction, n = 0 where the reduction has no value.
void validate_case(const Case& c, const Settings& s);
// The spec's dtypes (x: f32; y: i64 for arg-reductions, else x's).
std::pair<DType, DType> spec_dtypes(const Spec& spec, const Settings& s);
Parts plain_parts(const Spec& spec, const Settings& s, rows::Shape shape, std::string origin);

// Lets `requires` see b (1 for 2-D cases), rows, n and tensors x, y.
class Context final : public EvalContext {
 public:
  explicit Context(const Case& c);
  std::optional<double> variable(std::string_view name) const override;
  std::optional<TensorGeom> tensor(std::string_view name) const override;

 private:
  rows::Shape s_;
  TensorGeom x_, y_;
};
struct Names final : EvalContext {
  std::optional<double> variable(std::string_view n) const override;
  std::optional<TensorGeom> tensor(std::string_view n) const override;
};

}  // namespace assay::reduce
