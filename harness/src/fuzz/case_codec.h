// Structure-aware fuzzing: libFuzzer's bytes decode into a GEMM case (dims,
// layouts, offsets, scalars, value recipe, seed), and the custom mutator makes
// the moves that matter for kernels instead of flipping random bits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "case/case.h"
#include "spec/spec.h"

namespace assay::fuzz {

struct CodecLimits {
  int64_t max_dim = 256;  // every dimension stays below this
};

// Any bytes decode to a case (short input reads as zeros).
Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim);
// The bytes that decode back to c (dims clamped as decode would).
std::vector<uint8_t> encode(const Case& c);
// One kernel-meaningful move: a dimension to 0, 1, +-1, a tile boundary or a
// power of two's neighbour; a transpose, padding or offset; a scalar; the
// recipe; the seed.
Case mutate(const Case& c, uint64_t random, const CodecLimits& lim);

}  // namespace assay::fuzz
