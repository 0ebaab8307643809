// Picks the reference for where x lives (host loops or a CUDA kernel, side
// by side) and hands its result over in blocks of whole rows, so the host
// never holds ref and bound for a whole huge tensor; compares y block by block.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "backend/backend.h"
#include "core/deadline.h"
#include "judge/compare.h"
#include "ops/softmax/softmax_math.h"
#include "ops/rows/rows.h"
#include "ops/softmax/softmax_problem.h"

namespace assay::softmax {

using rows::block_elements;
using rows::block_geom;
using rows::row_blocks;
using rows::RowBlock;

using BlockVisitor = std::function<void(const RowBlock& b, const double* ref, const double* bound)>;
// x: its data start in the backend's memory (geometry gx).
// The blocks handed over where `where` says.
void reference_rows(Backend& backend, const Shape& s, const TensorGeom& gx, const std::byte* x, const ErrorModel& e,
                    const BlockVisitor& visit, ResultsIn where = ResultsIn::host);

// y (the backend's memory, at its data start) against the reference,
// judged there (Backend::compare); between blocks
// (never before the first) throws DeadlineReached once `deadline` passed.
// keep_ref / keep_bound, if given, receive the whole arrays.
CompareStats compare_rows(Backend& backend, const Shape& s, const TensorGeom& gx, const std::byte* x,
                          const TensorGeom& gy, const std::byte* y, const ErrorModel& e, const Tolerance& tol,
                          const Deadline& deadline, std::vector<double>* keep_ref, std::vector<double>* keep_bound);

}  // namespace assay::softmax
