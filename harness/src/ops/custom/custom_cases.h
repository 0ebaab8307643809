// Cases of a custom op: the sweep, random cases, fitting the spec's requires,
// the costs, and the fuzzer's byte encoding. Everything follows from the
// declaration (custom_def.h): sizes inside their ranges, shapes from the
// expressions.
#pragma once
#include <optional>
#include <vector>

#include "ops/custom/custom_def.h"
#include "ops/op.h"

namespace assay::custom {

// Value parameters of tensor t (case/values.h). `mixed` spreads exponents
// over [kMixedExpLo, kMixedExpHi] only: a custom op's error model is not
// known, and wide spreads make correct kernels (a prefix sum) fail any fixed
// tolerance (docs/ops/custom.md, "Recipes").
inline constexpr int kMixedExpLo = -4, kMixedExpHi = 4;
RecipeParams recipe_params(const Case& c, int t);

// Costs (Op::work, case_bytes, host_bytes).
double elements(const Case& c);
double case_bytes(const Case& c);
double host_bytes(const Def& def, const Case& c, BackendKind backend);

// Sizes in range, shapes as the expressions give them, strides as many as
// the dimensions and positive, and the requires holding.
bool consistent(const Def& def, const Case& c);
bool inside(const Def& def, const Spec& spec, const Case& c);
// The case itself when inside the spec, else the nearest variant found:
// plain layouts, then one size at a time moved to the nearest value that
// fits (sizes other than `keep_size` first), then all sizes equal.
std::optional<Case> fit(const Def& def, const Spec& spec, const Case& c, int keep_size = -1);

std::vector<Case> sweep(const Def& def, const Spec& spec, uint64_t seed, const SweepTarget& target);
std::optional<Case> random_case(const Def& def, const Spec& spec, uint64_t seed, uint64_t index,
                                const GenLimits& lim);
// The case with these sizes (clamped to their ranges), each tensor keeping
// its orientation (and padding and offset when keep_layout) and keep.
Case resize(const Def& def, const Case& c, std::span<const int64_t> sizes, bool keep_layout);

// Fuzzing: u16 per size, a layout byte per tensor (bit 0 column-major, bits
// 1-4 padding, bits 5-6 offset), a byte per scalar, the recipe, the seed (u64).
Case decode(const Def& def, const uint8_t* data, size_t size, const CodecLimits& lim);
std::vector<uint8_t> encode(const Def& def, const Case& c, const CodecLimits& lim);
Case mutate(const Def& def, const Case& c, uint64_t random, const CodecLimits& lim);

}  // namespace assay::custom
