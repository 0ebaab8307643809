// Structure-aware fuzzing shared by row-wise ops: libFuzzer's bytes decode
// into a shape (rows, n, an optional batch), one layout per tensor the op lets
// vary, a recipe and a seed; the mutator makes the moves that matter for
// row-wise kernels. The op says how a genome becomes its case and back.
//
// Bytes: rows, n (u16 each, modulo max_dim), batch byte (bit 7: batched;
// bits 0-2: b - 1), one layout byte per varied tensor (bit 0: transposed;
// bits 1-4: padding; bits 5-6: offset; bit 7: a gap of 5 between batches, or
// for a per-column tensor a broadcast, stride 0), the recipe (an index into
// the op's list), u64 seed. Then the huge extension, 4 bytes: a tag naming
// rows or n and its value (u24), used only where the limits allow huge
// cases (cuda).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "ops/op.h"
#include "ops/rows/rows.h"

namespace assay::rows {

struct Genome {
  Shape shape;
  std::vector<Layout> layouts;  // one per varied tensor, in the op's order
  Recipe recipe = Recipe::uniform;
  uint64_t seed = 0;
};

struct Codec {
  size_t layouts = 2;            // varied tensors
  double element_tensors = 2;    // tensors of rows x n elements (for max_elements)
  std::vector<Recipe> recipes;   // what the recipe byte picks from
  std::function<Case(const Genome&)> make;
  std::function<Genome(const Case&)> genome;
  std::function<bool(const Case&, const SweepTarget&)> huge_case_fits;
};

Case decode(const Codec& codec, const uint8_t* data, size_t size, const CodecLimits& lim);
std::vector<uint8_t> encode(const Codec& codec, const Case& c, const CodecLimits& lim);
// One move: n to 1, 2, 3, 31..33 or a power of two +-1; rows likewise or
// +-1; a size doubled or halved; a tensor transposed, padded, offset or
// broadcast; a batch added or removed; the recipe; the seed. Rarely, where
// huge cases may run, rows past 65,535 or 2^20, or n past 2^16.
Case mutate(const Codec& codec, const Case& c, uint64_t random, const CodecLimits& lim);
bool is_huge(const Case& c, const CodecLimits& lim);

}  // namespace assay::rows
