// Counter-based random numbers: value i of a stream is a pure function of
// (seed, stream, i), so host and device, and any thread order, agree bit for bit.
#pragma once
#include <cstdint>

#include "core/hd.h"

namespace assay {

// SplitMix64 finalizer: a bijective 64-bit mixer with good avalanche.
ASSAY_HD uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

ASSAY_HD uint64_t hash3(uint64_t seed, uint64_t stream, uint64_t index) {
  return mix64(mix64(seed ^ mix64(stream)) + index);
}

// Uniform double in [0, 1) with 53 random bits: exact, no rounding involved.
ASSAY_HD double unit_double(uint64_t h) { return double(h >> 11) * (1.0 / 9007199254740992.0); }

}  // namespace assay
