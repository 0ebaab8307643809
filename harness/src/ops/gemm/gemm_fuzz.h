// Structure-aware fuzzing of GEMM: libFuzzer's bytes decode into a GEMM
// case (dims, layouts, offsets, scalars, value recipe, seed), and the custom
// mutator makes the moves that matter for kernels instead of flipping random
// bits. The op (gemm_op.cpp) hands these to fuzz/ through ops/op.h.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/op.h"
#include "spec/spec.h"

namespace assay::gemm {

// A case with a dimension at or past lim.max_dim (only decode's huge extension makes one).
bool is_huge_problem(const Problem& c, const CodecLimits& lim);

// Any bytes decode to a case within the limits (short input reads as zeros).
// Bytes 0-19: dims (u16 each, modulo max_dim), layouts, scalars, recipe, seed.
// Bytes 20-23, the huge extension: a tag naming one dimension, and that
// dimension's value (u24). Ignored unless the limits allow huge cases and the
// case fits them; 20-byte inputs of older corpora decode as before.
Problem decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim);
// The bytes that decode back to c under the same limits.
std::vector<uint8_t> encode(const Problem& c, const CodecLimits& lim = CodecLimits{});
// One kernel-meaningful move: a dimension to 0, 1, +-1, a tile boundary or a
// power of two's neighbour; a transpose, padding or offset; a scalar; the
// recipe; the seed. Where huge cases are allowed, rarely (1 in 64) the huge
// move: one dimension to 2^20..2^22 and a neighbour, and either the others
// small or one of them so that a tensor passes 2^31 elements.
Problem mutate(const Problem& c, uint64_t random, const CodecLimits& lim);
// A campaign's first inputs: small square cases (1, 7, 33; beta 0 and 1, integer
// values) fitted to the spec's requires. libFuzzer gives up when none of its
// first inputs is usable (all-zero bytes decode to beta = 1, outside a spec
// that requires beta == 0).
std::vector<Problem> seed_cases(const Spec& spec);

}  // namespace assay::gemm
