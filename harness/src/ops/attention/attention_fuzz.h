// Structure-aware fuzzing of attention: libFuzzer's bytes decode into sizes,
// causal and the scale, one layout per tensor, a recipe and a seed; the
// mutator makes the moves that break attention kernels (sequence lengths at
// tile edges, sq != sk under causal, head ratios, head dims, strided
// tensors, other scales). Bytes: b, hk, hq/hk (an index into 1, 2, 4, 8),
// sq and sk (u16 each), d - 1 and dv - 1 (u8 each), flags (bit 0 causal;
// bits 1-2 the scale: 1/sqrt(d), 1, 0.5/sqrt(d), 2/sqrt(d)), one layout byte
// per tensor q, k, v, o, lse (bit 0 bshd; bits 1-3 padding; bits 4-5 the
// offset; bits 6-7 a gap between batches of 0, 3, 8 or 17), the recipe (an
// index into kRecipes), u64 seed.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/attention/attention_problem.h"
#include "ops/op.h"

namespace assay::attention {

Case decode(const uint8_t* data, size_t size, const Spec& spec, const Settings& s, const CodecLimits& lim);
std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim);
Case mutate(const Case& c, const Settings& s, uint64_t random, const CodecLimits& lim);
std::vector<Case> seed_cases(const Spec& spec, const Settings& s);

}  // namespace assay::attention
