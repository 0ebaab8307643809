// Structure-aware fuzzing of softmax: libFuzzer's bytes decode into a case
// (rows, n, an optional batch, each tensor's layout, the recipe, the seed),
// and the mutator makes the moves that matter for row-wise kernels.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/op.h"
#include "ops/softmax/softmax_problem.h"

namespace assay::softmax {

// Bytes 0-15: rows, n (u16 each, modulo max_dim), batch byte (bit 7:
// batched; bits 0-2: b - 1), x and y layout bytes (bit 0: transposed; bits
// 1-4: padding; bits 5-6: offset; bit 7: a gap of 5 between batches),
// recipe, u64 seed. Bytes 16-19, the huge extension: a tag naming rows or n
// and its value (u24), used only where the limits allow huge cases (cuda).
Case decode(const uint8_t* data, size_t size, const Spec& spec, bool log, const CodecLimits& lim);
std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim);
// One move: n to 1, 2, 3, 31..33 or a power of two +-1; rows likewise or
// +-1; a size doubled or halved; x or y transposed, padded or offset; a
// batch added or removed; the recipe; the seed. Rarely, where huge cases
// may run, rows past 65,535 or 2^20, or n past 2^16.
Case mutate(const Case& c, uint64_t random, const CodecLimits& lim);
std::vector<Case> seed_cases(const Spec& spec, bool log);
bool is_huge(const Case& c, const CodecLimits& lim);

}  // namespace assay::softmax
