// The FP64 fp8_gemm reference: the operands dequantized exactly (each FP8
// value times its block's f32 scale, exact in double) and multiplied by the
// GEMM family's reference engines (Eigen on the host, cuBLAS DGEMM on the
// device: ops/gemm/gemm_reference_*), with |A'||B'| for the bound; the
// result handed over in blocks of rows of d, and the comparison of d.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "core/deadline.h"
#include "judge/compare.h"
#include "ops/fp8_gemm/fp8_gemm_bound.h"
#include "ops/fp8_gemm/fp8_gemm_problem.h"

namespace assay::fp8_gemm {

// Each row's largest finite |x|: a and a_scale per row of a, b and b_scale
// per row of b (b_scale's row j / 128 for row j).
struct RowMaxima {
  std::vector<double> a, a_scale, b, b_scale;
};
RowMaxima row_maxima(Backend& backend, const Case& c, std::span<const std::byte* const> device);
// The error floor of element (i, j) (docs/tolerance.md, "fp8_gemm").
double error_floor(const ErrorModel& e, const RowMaxima& r, int64_t k, int64_t i, int64_t j);

// Rows [row0, row0 + rows) of d: reference and bound, row-major.
using BlockVisitor = std::function<void(int64_t row0, int64_t rows, const double* ref, const double* bound)>;
// device: the case's tensors' data starts in the backend's memory; the
// blocks handed over where `where` says.
void reference_blocks(Backend& backend, const Case& c, std::span<const std::byte* const> device,
                      const ErrorModel& e, const BlockVisitor& visit, ResultsIn where = ResultsIn::host);
// The whole FP64 answer per tensor (inputs empty; d row-major).
std::vector<std::vector<double>> reference_arrays(Backend& backend, const Case& c,
                                                  std::span<const std::byte* const> device);

// d in the backend's memory against the reference, judged there
// (Backend::compare); between blocks (never before the
// first) throws DeadlineReached once `deadline` passed. keep_ref /
// keep_bound, if given, receive the whole arrays (inputs: empty).
CompareStats compare_case(Backend& backend, const Case& c, std::span<const std::byte* const> device,
                          std::span<const std::byte* const> out, const ErrorModel& e, const Tolerance& tol,
                          const Deadline& deadline, std::vector<std::vector<double>>* keep_ref,
                          std::vector<std::vector<double>>* keep_bound);

}  // namespace assay::fp8_gemm
