// Structure-aware fuzzing: libFuzzer's bytes decode into a GEMM case (dims,
// layouts, offsets, scalars, value recipe, seed), and the custom mutator makes
// the moves that matter for kernels instead of flipping random bits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "case/case.h"
#include "ops/gemm/gemm_generator.h"
#include "spec/spec.h"

namespace assay::fuzz {

struct CodecLimits {
  int64_t max_dim = 256;     // ordinary cases: every dimension stays below this
  double max_work = 1e300;   // and m*n*k at most this,
  double max_elements = 1e300;  // and m*k + k*n + m*n at most this (the largest dimension gives way)
  // Huge cases: one dimension from max_dim up to 2^24 - 1, the others
  // ordinary, for index and grid limits (2^31 elements, 2^20 rows). Allowed
  // where the gate's sweep runs its cases past 2^31 elements: on the target
  // gemm::huge_case_fits accepts (cuda, within the device and host memory
  // budgets); never on the host.
  gemm::SweepTarget huge{BackendKind::host, 0};
  double max_huge_work = 0;  // m*n*k of a huge case at most this
};

// A campaign's limits on `kind` (campaign.cpp; the fuzz lab's too). Ordinary
// cases: any dimension below 8192, m*n*k at most 2^22 on the host and 2^30
// on a GPU, elements at most 2^17 and 2^22. Huge cases on cuda only, within
// `memory_budget` bytes of device memory (gemm::case_bytes), `host_budget`
// bytes of the harness's host memory (gemm::host_bytes) and 2^36 multiply-adds.
CodecLimits campaign_limits(BackendKind kind, double memory_budget, double host_budget = 1e300);

// A case with a dimension at or past lim.max_dim (only decode's huge extension makes one).
bool is_huge(const Case& c, const CodecLimits& lim);

// Any bytes decode to a case within the limits (short input reads as zeros).
// Bytes 0-19: dims (u16 each, modulo max_dim), layouts, scalars, recipe, seed.
// Bytes 20-23, the huge extension: a tag naming one dimension, and that
// dimension's value (u24). Ignored unless the limits allow huge cases and the
// case fits them; 20-byte inputs of older corpora decode as before.
Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim);
// The bytes that decode back to c under the same limits.
std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim = CodecLimits{});
// One kernel-meaningful move: a dimension to 0, 1, +-1, a tile boundary or a
// power of two's neighbour; a transpose, padding or offset; a scalar; the
// recipe; the seed. Where huge cases are allowed, rarely (1 in 64) the huge
// move: one dimension to 2^20..2^22 and a neighbour, and either the others
// small or one of them so that a tensor passes 2^31 elements.
Case mutate(const Case& c, uint64_t random, const CodecLimits& lim);
// A campaign's first inputs: small square cases (1, 7, 33; beta 0 and 1, integer
// values) fitted to the spec's requires. libFuzzer gives up when none of its
// first inputs is usable (all-zero bytes decode to beta = 1, outside a spec
// that requires beta == 0).
std::vector<Case> seed_cases(const Spec& spec);

}  // namespace assay::fuzz
