// The unary family's tensor convention under the ABI (docs/ops/unary.md):
// one input x and one output y of the same shape, y = fn(x) element by
// element, no scalars. Sizes {rows, n} or {b, rows, n} (ops/rows); the
// kernel sees N-D tensors of any strides. The spec's `fn` and `math` keys
// are the op's settings. Everything else in ops/unary builds on these.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "case/case.h"
#include "ops/rows/rows.h"
#include "ops/unary/unary_math.h"
#include "spec/requires.h"
#include "spec/spec.h"

namespace assay::unary {

enum Tensor : int { X = 0, Y = 1 };

inline constexpr std::string_view kOpName = "unary";

// The library the kernel's exp, erf and tanh come from (docs/tolerance.md).
enum class Math : uint8_t { ieee, cuda, fast };
struct Settings {
  Fn fn = Fn::relu;
  Math math = Math::ieee;
};
std::string_view fn_name(Fn f);
// The settings of a spec: `fn` (required in a spec file; relu for a spec
// built in code) and `math`. Throws InputError "FILE:LINE: key 'X': ..." for
// bad values and a compute of tf32.
Settings read_settings(const Spec& spec);

using rows::Layout;
using rows::Shape;

struct Parts {  // everything a case is made of
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
// Parts with the spec's dtypes (f32 where a spec built in code gives none) and plain layouts.
Parts plain_parts(const Spec& spec, Shape s, std::string origin);

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

}  // namespace assay::unary
