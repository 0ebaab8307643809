// Structure-aware fuzzing of moe_topk: libFuzzer's bytes decode into sizes
// (tokens, experts, topk), one layout per tensor, a recipe and a seed; the
// mutator makes the moves that break routing kernels (expert counts at
// warp edges and of real models, topk at its limits, token tails, strided
// logits). Bytes: tokens (u16), experts (u16, 1..512), topk (u8), one layout
// byte per tensor (logits, bias, weights, indices: bit 0 transposed, logits
// only; bits 1-4 padding; bits 5-6 offset), recipe (an index into
// kRecipes), u64 seed; then, where the limits allow huge cases (cuda), a
// 3-byte token count past 65,535.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/moe_topk/moe_topk_problem.h"
#include "ops/op.h"

namespace assay::moe_topk {

Case decode(const uint8_t* data, size_t size, const Spec& spec, const Settings& s, const CodecLimits& lim);
std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim);
Case mutate(const Case& c, const Settings& s, uint64_t random, const CodecLimits& lim);
std::vector<Case> seed_cases(const Spec& spec, const Settings& s);
bool is_huge(const Case& c, const CodecLimits& lim);

}  // namespace assay::moe_topk
