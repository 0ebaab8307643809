// The norm family's tensor convention under the ABI (docs/ops/layernorm.md,
// docs/ops/rmsnorm.md), built from ops/rows pieces:
//   layernorm: x [b?, rows, n], weight [n], bias [n] -> y [b?, rows, n],
//              mean [b?, rows], rstd [b?, rows]; scalar eps
//   rmsnorm:   x, weight -> y; scalar eps
// Everything else in ops/norm works on the typed view (Parts) below.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "case/case.h"
#include "ops/rows/rows.h"
#include "spec/requires.h"
#include "spec/spec.h"

namespace assay::norm {

// Tensor slots; a layernorm case holds all six in this order, an rmsnorm
// case x, weight, y (tensor_index maps a slot to its index in the case).
enum Slot : int { X = 0, W = 1, B = 2, Y = 3, MEAN = 4, RSTD = 5 };
inline constexpr int kSlots = 6;
const char* slot_name(int slot);
rows::Kind slot_kind(int slot);
bool slot_is_input(int slot);
// The slots of a case of that op, in ABI order.
std::vector<int> slots(bool rms);
// Index of the slot in the case's tensors, -1 where the op has none.
int tensor_index(bool rms, int slot);

enum class Math : uint8_t { ieee, cuda, fast };
struct Settings {
  bool rms = false;
  Math math = Math::ieee;  // the 1/sqrt the kernel uses
  bool writes_stats = true;  // layernorm: `writes` names mean and rstd (the default)
};
std::string_view op_name(bool rms);
// The settings of a spec (its `math`, `writes`, `compute` and `dtypes`);
// defaults for a spec built in code. Throws InputError "FILE:LINE: key 'X': ..."
void check_spec(const Spec& spec, bool rms);
Settings read_settings(const Spec& spec, bool rms);

struct Parts {  // everything a case is made of
  bool rms = false;
  rows::Shape shape;
  std::array<DType, kSlots> type{DType::f32, DType::f32, DType::f32, DType::f32, DType::f32, DType::f32};
  std::array<rows::Layout, kSlots> layout{};
  double eps = 1e-5;
  Recipe recipe = Recipe::uniform;
  uint64_t seed = 0;
  std::array<Keep, kSlots> keep{};  // the inputs' (the shrinker's cuts)
  std::string origin;
};
Case make_case(const Parts& p);
Parts parts_of(const Case& c);
// Parts with the spec's dtypes, plain layouts, eps 1e-5.
Parts plain_parts(const Spec& spec, bool rms, rows::Shape s, std::string origin);

// Throws InputError saying what is not right (names, roles, shapes, eps).
void validate_case(const Case& c);
bool is_rms(const Case& c);

// Lets `requires` see b, rows, n, eps and the case's tensors by name.
class Context final : public EvalContext {
 public:
  explicit Context(const Case& c);
  std::optional<double> variable(std::string_view name) const override;
  std::optional<TensorGeom> tensor(std::string_view name) const override;

 private:
  rows::Shape s_;
  double eps_ = 0;
  std::vector<std::pair<std::string, TensorGeom>> t_;
};
struct Names final : EvalContext {
  bool rms = false;
  std::optional<double> variable(std::string_view n) const override;
  std::optional<TensorGeom> tensor(std::string_view n) const override;
};

}  // namespace assay::norm
