// The fp8_gemm family's convention under the ABI (docs/ops/fp8_gemm.md):
// a [m, k] and b [n, k] in FP8 (e4m3 or e5m2), a_scale f32 [m, kb] per 1 x 128
// block, b_scale f32 [nb, kb] per 128 x 128 block, d [m, n] (bf16 or f32) out;
// d = (a · a_scale)(b · b_scale)ᵀ. This file holds the spec's claims, the
// tensors' layouts, the typed view of a case and its checks.
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

namespace assay::fp8_gemm {

// The scales' block along k, and b_scale's along n (DeepGEMM's 128).
inline constexpr int64_t kScaleBlock = 128;
inline int64_t blocks(int64_t extent) { return (extent + kScaleBlock - 1) / kScaleBlock; }

// How the kernel accumulates the products (spec `accumulate`).
enum class Accumulate : uint8_t {
  f32,              // every partial sum an IEEE f32
  fp8_tensor_core,  // Hopper's ~14-bit FP8 MMA accumulator, promoted into f32 every promote_every
};
struct Settings {
  Accumulate accumulate = Accumulate::f32;
  int64_t promote_every = 128;  // k-elements between promotions (fp8_tensor_core)
};
// Throws InputError "FILE:LINE: key 'X': ..." for bad values, a compute
// other than f32, and dtypes that do not name exactly the tensors or are not
// the op's.
Settings read_settings(const Spec& spec);

struct Sizes {
  int64_t m = 1, n = 1, k = 1;
  bool operator==(const Sizes&) const = default;
};

// Each tensor is 2-D: row-major ([rows, cols] with the last dim unit-stride)
// or col_major (MN-major: rows unit-stride, as DeepGEMM lays a_scale out for
// TMA), rows padded, a base offset (rows::Layout; batch_gap and broadcast unused).
using Layout = rows::Layout;

struct Parts {  // everything a case is made of
  Sizes sizes;
  DType a_type = DType::e4m3, b_type = DType::e4m3, d_type = DType::bf16;
  Layout a, a_scale, b, b_scale, d;
  Recipe recipe = Recipe::uniform;
  uint64_t seed = 0;
  Keep keep[4];  // per input (a, a_scale, b, b_scale): the shrinker's cut to fewer nonzeros
  std::string origin;
};
Case make_case(const Parts& p);
// Tensor t's layout in p (ABI order: a, a_scale, b, b_scale, d).
Layout& layout_at(Parts& p, int t);
const Layout& layout_at(const Parts& p, int t);
Parts parts_of(const Case& c);  // throws InputError where the case is not fp8_gemm's

// Tensor positions (ABI order).
inline constexpr int A = 0, AS = 1, B = 2, BS = 3, D = 4;
Sizes sizes_of(const Case& c);

// Throws InputError saying what is not right: sizes, names, roles, shapes, dtypes.
void validate_case(const Case& c);
// The spec's dtypes, plain layouts.
Parts plain_parts(const Spec& spec, Sizes z, std::string origin);

// Lets `requires` see m, n, k and the tensors by name (case_context), and
// kb, nb (the scales' blocks along k and n).
class Context final : public EvalContext {
 public:
  explicit Context(const Case& c);
  std::optional<double> variable(std::string_view name) const override;
  std::optional<TensorGeom> tensor(std::string_view name) const override;

 private:
  Sizes z_;
  std::unique_ptr<EvalContext> sizes_and_tensors_;
};
struct Names final : EvalContext {
  std::optional<double> variable(std::string_view n) const override;
  std::optional<TensorGeom> tensor(std::string_view n) const override;
};

}  // namespace assay::fp8_gemm
