// The moe_topk family's convention under the ABI (docs/ops/moe_topk.md):
// logits [tokens, experts] and, with `routing.bias: true`, bias [experts]
// in; weights f32 and indices i32 [tokens, topk] out; one scalar, topk.
// Layouts are the row-wise ops' (ops/rows): logits and the outputs are
// element tensors of their own row lengths, bias a per-column tensor. This
// file holds the spec's routing claims, the typed view of a case and its checks.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "case/case.h"
#include "ops/rows/rows.h"
#include "spec/requires.h"
#include "spec/spec.h"

namespace assay::moe_topk {

enum class Mode : uint8_t { softmax_topk, sigmoid_bias_grouped };

// What the spec claims besides the generic keys (`routing:`, `sorted`, `math`).
struct Settings {
  Mode mode = Mode::softmax_topk;
  bool renormalize = true;
  bool bias = false;       // a bias input, added to the scores for the choice only
  int n_group = 1;         // sigmoid_bias_grouped: contiguous groups of experts / n_group
  int topk_group = 1;      // ... of which the best topk_group are kept
  double scaling = 1.0;    // routed_scaling_factor
  bool sorted = true;      // slots in descending selection score
  bool fast_math = false;  // `math: fast`: __expf's bound instead of expf's
  bool grouped() const { return mode == Mode::sigmoid_bias_grouped && n_group > 1; }
};
std::string_view name(Mode m);
// Throws InputError "FILE:LINE: key 'X': ..." for bad values, keys that do
// not apply to the mode, a compute other than f32 or f64, and dtypes.
Settings read_settings(const Spec& spec);

struct Sizes {
  int64_t tokens = 0, experts = 1, topk = 1;
  bool operator==(const Sizes&) const = default;
};

struct Parts {  // everything a case is made of
  Sizes sizes;
  bool bias = false;
  DType logits_type = DType::f32;
  rows::Layout logits, bias_layout, weights, indices;
  Recipe recipe = Recipe::uniform;
  uint64_t seed = 0;
  Keep keep;  // logits'
  std::string origin;
};
Case make_case(const Parts& p);
Parts parts_of(const Case& c);  // throws InputError where the case is not moe_topk's

// Tensor positions: logits, then bias when present, then weights, indices.
struct Positions {
  int logits = 0, bias = -1, weights = 1, indices = 2;
};
Positions positions(const Case& c);
Sizes sizes_of(const Case& c);

// Throws InputError saying what is not right: names, roles, shapes from the
// sizes, dtypes, topk out of range, experts not a multiple of n_group, the
// scalar topk not the size topk.
void validate_case(const Case& c, const Settings& s);
// Whether the sizes suit the routing (topk within the kept groups' experts).
bool routable(const Sizes& z, const Settings& s);
Parts plain_parts(const Spec& spec, const Settings& s, Sizes z, std::string origin);

// Lets `requires` see tokens, experts, topk and the tensors by name.
class Context final : public EvalContext {
 public:
  explicit Context(const Case& c);
  std::optional<double> variable(std::string_view name) const override;
  std::optional<TensorGeom> tensor(std::string_view name) const override;

 private:
  Sizes z_;
  std::vector<std::pair<std::string, TensorGeom>> tensors_;
};
struct Names final : EvalContext {
  std::optional<double> variable(std::string_view n) const override;
  std::optional<TensorGeom> tensor(std::string_view n) const override;
};

}  // namespace assay::moe_topk
