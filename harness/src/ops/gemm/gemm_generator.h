// GEMM cases for the gate: a deterministic sweep of boundary sizes, layouts,
// scalars, value recipes and large cases, then seeded random cases. Every case
// is moved inside the spec's `requires` or dropped.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ops/gemm/gemm_problem.h"
#include "ops/op.h"
#include "spec/spec.h"

namespace assay::gemm {

// Whether a case past the ordinary sizes (a tensor past 2^31 elements, a
// dimension past 2^20) may run on `target`: only on cuda, and only when
// case_bytes fits its device memory and host_bytes its host memory. The sweep's index cases and the fuzzer's
// huge cases (fuzz/case_codec.h) both go by this.
bool huge_case_fits(const Problem& c, const SweepTarget& target);

// The fixed sweep for `seed`, in order of priority (cheap, telling cases first).
std::vector<Problem> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target);
// The same for the spec's own backend with no memory limit.
std::vector<Problem> sweep(const Spec& spec, uint64_t seed);
// Random case `index` of the stream `seed`; nullopt if none fits the spec.
std::optional<Problem> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim);
// The case itself if it satisfies the spec's requires, else the nearest
// variant found by relaxing layouts and rounding dimensions up; nullopt if none.
std::optional<Problem> fit_requires(const Problem& c, const Spec& spec);
// Compact row-major (false) or column-major (true) layout with padding and offset.
Layout make_layout(int64_t rows, int64_t cols, bool col_major, int64_t pad = 0, int64_t offset = 0);
// Bytes one case needs in its backend's memory: its buffers (live and as
// handed), C0's scratch and the reference's FP64 scratch.
double case_bytes(const Problem& c);
// Host bytes the harness's own process takes for one case at its peak, on
// `backend`: up to three host images of C (as calls 1 and 2 left it and as
// call 2 was handed it) or two and one of an input that came back changed,
// and the reference's block of rows; on the host backend also every buffer
// (planned cases' copies too) and the Eigen reference's widened operands.
double host_bytes(const Problem& c, BackendKind backend);

}  // namespace assay::gemm
