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
  double max_bytes = 0;                // device memory for one case (case_bytes)
  double max_host_bytes = 1e300;       // the harness's host memory for one case (host_bytes)
};

// Whether a case past the ordinary sizes (a tensor past 2^31 elements, a
// dimension past 2^20) may run on `target`: only on cuda, and only when
// case_bytes fits its device memory and host_bytes its host memory. The sweep's index cases and the fuzzer's
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
// Bytes one case needs in its backend's memory: its buffers (live and as
// handed), C0's scratch and the reference's FP64 scratch.
double case_bytes(const Case& c);
// Host bytes the harness's own process takes for one case at its peak, on
// `backend`: up to three host images of C (as calls 1 and 2 left it and as
// call 2 was handed it) or two and one of an input that came back changed,
// and the reference's block of rows; on the host backend also every buffer
// (planned cases' copies too) and the Eigen reference's widened operands.
double host_bytes(const Case& c, BackendKind backend);

}  // namespace assay::gemm
