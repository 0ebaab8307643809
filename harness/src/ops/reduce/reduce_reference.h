// The FP64 reference of a reduce case, host loops or a CUDA kernel side by
// side (picked by where x lives), handed over in blocks of rows
// (rows::row_blocks), and the comparison of y block by block.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "backend/backend.h"
#include "core/deadline.h"
#include "judge/compare.h"
#include "ops/reduce/reduce_math.h"
#include "ops/rows/rows.h"

namespace assay::reduce {

// Rows [row0, row0 + rows) of x's matrix view, in host memory: ref and bound
// per row. got: the kernel's indices for those rows (ties: any), or null.
void reference_host(const std::byte* x, const TensorGeom& g, const ErrorModel& e, int64_t row0, int64_t rows,
                    const double* got, double* ref, double* bound);

using BlockVisitor = std::function<void(const rows::RowBlock& b, const double* ref, const double* bound)>;
// x: its data start in the backend's memory (geometry gx). y / gy: the
// kernel's output in host memory, read only for `ties: any` (may be null).
void reference_rows(Backend& backend, const rows::Shape& s, const TensorGeom& gx, const std::byte* x,
                    const TensorGeom& gy, const std::byte* y, const ErrorModel& e, const BlockVisitor& visit);

// y (host memory, at its data start) against the reference; between blocks
// throws DeadlineReached once `deadline` passed. keep_ref / keep_bound, if
// given, receive the whole arrays (one value per row).
CompareStats compare_rows(Backend& backend, const rows::Shape& s, const TensorGeom& gx, const std::byte* x,
                          const TensorGeom& gy, const std::byte* y, const ErrorModel& e, const Tolerance& tol,
                          const Deadline& deadline, std::vector<double>* keep_ref, std::vector<double>* keep_bound);

}  // namespace assay::reduce
