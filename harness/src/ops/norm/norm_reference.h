// The FP64 reference of a norm case, block by block of whole rows
// (rows::row_blocks): host loops or a CUDA kernel, picked by backend, side
// by side; y's reference and bound per element, the statistics' per row.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>

#include "backend/backend.h"
#include "core/tensor_geom.h"
#include "ops/norm/norm_math.h"
#include "ops/norm/norm_reference_cuda.h"
#include "ops/rows/rows.h"

namespace assay::norm {

void reference_host(const Inputs& in, const ErrorModel& e, int64_t row0, int64_t rows, const BlockOut& out);

using BlockVisitor = std::function<void(const rows::RowBlock& b, const BlockOut& out)>;
// Every block in row order; out's arrays hold that block (nothing for n = 0
// beyond the statistics).
// The arrays in host memory, or where the backend's data lives (`where`).
void reference_rows(Backend& backend, const rows::Shape& s, const Inputs& in, const ErrorModel& e,
                    const BlockVisitor& visit, ResultsIn where = ResultsIn::host);

}  // namespace assay::norm
