// GEMM cases for the gate: a deterministic sweep of boundary sizes, layouts,
// scalars, value recipes and large cases, then seeded random cases. Every case
// is moved inside the spec's `requires` or dropped.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "case/case.h"
#include "spec/spec.h"

namespace assay::gemm {

struct GenLimits {
  int64_t max_random_dim = 1024;  // random cases stay below this per dimension
  double max_random_work = 1e9;   // and below this m*n*k
};

// Where the sweep will run: the cases past 2^31 elements are only for the cuda
// backend, and only those that fit `max_bytes` (case_bytes) are kept.
struct SweepTarget {
  BackendKind backend = BackendKind::host;
  double max_bytes = 0;
};

// Whether a case past the ordinary sizes (a tensor past 2^31 elements, a
// dimension past 2^20) may run on `target`: only on cuda, and only when
// case_bytes fits its memory budget. The sweep's index cases and the fuzzer's
// huge cases (fuzz/case_codec.h) both go by this.
bool huge_case_fits(const Case& c, const SweepTarget& target);

// The fixed sweep for `seed`, in order of priority (cheap, telling cases first).
std::vector<Case> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target);
// The same for the spec's own backend with no memory limit.
std::vector<Case> sweep(const Spec& spec, uint64_t seed);
// Random case `index` of the stream `seed`; nullopt if none fits the spec.
std::optional<Case> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim);
// The case itself if it satisfies the spec's requires, else the nearest
// variant found by relaxing layouts and rounding dimensions up; nullopt if none.
std::optional<Case> fit_requires(const Case& c, const Spec& spec);
// Compact row-major (false) or column-major (true) layout with padding and offset.
Layout make_layout(int64_t rows, int64_t cols, bool col_major, int64_t pad = 0, int64_t offset = 0);
// Bytes one case needs on its backend: buffers, guards and reference scratch.
double case_bytes(const Case& c);

}  // namespace assay::gemm
