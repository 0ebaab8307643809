// Element-wise comparison of a candidate's output against an FP64 reference
// and its error-bound magnitude, on the host (judge/element_check.h holds
// the rules, shared with the device's comparison: Backend::compare).
#pragma once
#include <cmath>
#include <cstdint>
#include <span>

#include "core/tensor_geom.h"
#include "judge/element_check.h"
#include "judge/verdict.h"

namespace assay {

// `out` points at the output's data start (its geometry g); ref, bound and
// terms (the size of the epilogue's terms, may be null when u_epilogue is 0)
// are g.rows() * g.cols() doubles, row-major. class_refs: more references (each
// at as many doubles), on the inputs converted into the compute type, whose
// NaN/Inf class an element may also have (docs/tolerance.md, "Narrow compute").
// All of it in host memory; Backend::compare judges where the data lives.
CompareStats compare(const Tolerance& tol, const TensorGeom& g, const std::byte* out, const double* ref,
                     const double* bound, const double* terms = nullptr,
                     std::span<const double* const> class_refs = {});
// At most ClassRefs::kMax of them (throws InfraError past it).
ClassRefs class_refs_of(std::span<const double* const> refs);
// Adds `block`, the stats of rows row0.. compared on their own, to `total`;
// blocks come in row order, so first_bad stays the first few in index order.
void accumulate(CompareStats& total, const CompareStats& block, int64_t row0);
// pass, unwritten_output, nan_mismatch or mismatch.
Verdict verdict_of(const CompareStats& s);

}  // namespace assay
