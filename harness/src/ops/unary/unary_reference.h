// Picks the reference for where x lives (a host loop or a CUDA kernel, side
// by side) and hands ref and bound over in the row blocks of ops/rows, so
// the host never holds them for a whole huge tensor; compares y block by block.
#pragma once
#include <functional>
#include <vector>

#include "backend/backend.h"
#include "core/deadline.h"
#include "judge/compare.h"
#include "ops/unary/unary_math.h"
#include "ops/unary/unary_problem.h"

namespace assay::unary {

using BlockVisitor = std::function<void(const rows::RowBlock& b, const double* ref, const double* bound)>;
// x: its data start in the backend's memory (geometry gx).
void reference_blocks(Backend& backend, const Shape& s, const TensorGeom& gx, const std::byte* x,
                      const ErrorModel& e, const BlockVisitor& visit, ResultsIn where = ResultsIn::host);

// y (the backend's memory, at its data start) against the reference,
// judged there (Backend::compare); between blocks
// (never before the first) throws DeadlineReached once `deadline` passed.
CompareStats compare_blocks(Backend& backend, const Shape& s, const TensorGeom& gx, const std::byte* x,
                            const TensorGeom& gy, const std::byte* y, const ErrorModel& e, const Tolerance& tol,
                            const Deadline& deadline, std::vector<double>* keep_ref, std::vector<double>* keep_bound);

// The host reference of one block: x read through the block's geometry gx
// (matrix view, row-major order), ref and bound into host arrays.
void reference_host(const std::byte* x, const TensorGeom& gx, const ErrorModel& e, double* ref, double* bound);

}  // namespace assay::unary
