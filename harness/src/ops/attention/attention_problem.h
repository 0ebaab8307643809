// The attention family's convention under the ABI (docs/ops/attention.md):
// q [b, hq, sq, d], k [b, hk, sk, d], v [b, hk, sk, dv] in; o [b, hq, sq, dv]
// and (unless `writes: [o]`) lse f32 [b, hq, sq] out; scalars scale and
// causal. This file holds the spec's claims, the tensors' layouts, the typed
// view of a case and its checks.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "case/case.h"
#include "ops/attention/attention_math.h"
#include "ops/softmax/softmax_problem.h"
#include "spec/requires.h"
#include "spec/spec.h"

namespace assay::attention {

// What the spec claims besides the generic keys.
struct Settings {
  DType p_dtype = DType::f32;                   // P kept in this type before P·V
  bool empty_nan = false;                       // `empty_rows: nan`
  bool writes_lse = true;                       // `writes: [o, lse]`
  softmax::Math math = softmax::Math::cuda;     // the exp the kernel uses
};
// Throws InputError "FILE:LINE: key 'X': ..." for bad values, a compute
// other than f32, f64 or tf32, and dtypes that do not name exactly the
// tensors (lse only when written) or are not the op's.
Settings read_settings(const Spec& spec);

struct Sizes {
  int64_t b = 1, hq = 1, hk = 1, sq = 1, sk = 1, d = 1, dv = 1;
  bool operator==(const Sizes&) const = default;
};
// hq a multiple of hk, every size at least 1, d and dv at most 256.
bool valid(const Sizes& z);

// A 4-D tensor's layout relative to its logical [b, h, s, e] shape (lse:
// [b, h, s]): `bshd` keeps memory in [b, s, h, e] order (FlashAttention's
// and PyTorch's callers), so a token's heads lie side by side; `pad` widens
// a row (bhsd: e + pad elements a row; bshd: h * e + pad a token); a gap
// between batches; a base offset.
struct Layout {
  bool bshd = false;
  int64_t pad = 0, batch_gap = 0, offset = 0;
  bool operator==(const Layout&) const = default;
};

struct Parts {  // everything a case is made of
  Sizes sizes;
  DType q_type = DType::f32, k_type = DType::f32, v_type = DType::f32, o_type = DType::f32;
  bool lse = true;
  Layout q, k, v, o, lse_layout;
  double scale = 1.0;
  bool causal = false;
  Recipe recipe = Recipe::uniform;
  uint64_t seed = 0;
  Keep q_keep, k_keep, v_keep;
  std::string origin;
};
Case make_case(const Parts& p);
Parts parts_of(const Case& c);  // throws InputError where the case is not attention's

// Tensor positions: q, k, v, o, then lse when written.
inline constexpr int Q = 0, K = 1, V = 2, O = 3, LSE = 4;
Sizes sizes_of(const Case& c);
bool has_lse(const Case& c);

// Throws InputError saying what is not right: sizes, names, roles, shapes,
// dtypes, lse present exactly when the spec writes it, the scalars.
void validate_case(const Case& c, const Settings& s);
// Whether scale is 1/sqrt(d), the scale most callers pass (resizing a case
// keeps it the usual one).
bool usual_scale(double scale, int64_t d);
// The spec's dtypes, 1/sqrt(d), not causal, plain layouts.
Parts plain_parts(const Spec& spec, const Settings& s, Sizes z, std::string origin);

// Lets `requires` see the sizes, scale and causal, and the tensors by name.
class Context final : public EvalContext {
 public:
  explicit Context(const Case& c);
  std::optional<double> variable(std::string_view name) const override;
  std::optional<TensorGeom> tensor(std::string_view name) const override;

 private:
  Sizes z_;
  double scale_ = 1, causal_ = 0;
  std::vector<std::pair<std::string, TensorGeom>> tensors_;
};
struct Names final : EvalContext {
  std::optional<double> variable(std::string_view n) const override;
  std::optional<TensorGeom> tensor(std::string_view n) const override;
};

}  // namespace assay::attention
