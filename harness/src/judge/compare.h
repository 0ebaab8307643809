// Element-wise comparison of a candidate's output against an FP64 reference
// and its error-bound magnitude. Op-agnostic: the op's tolerance model
// supplies the numbers (docs/tolerance.md derives them).
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <span>
#include <vector>

#include "core/tensor_geom.h"
#include "judge/verdict.h"

namespace assay {

struct Tolerance {
  DType out = DType::f32;
  double u_eff = 0;        // effective unit roundoff of the whole computation
  double scale = 2;        // T: safety factor over the bound
  double u_epilogue = 0;   // one rounding of the epilogue's terms in the output type
  bool exact = false;      // exact values: elements whose bound fits exact_bits must match bit for bit
  int exact_bits = 0;
  bool poisoned = false;   // the output was poisoned before the call (no C0 to read)
  uint64_t poison = 0;
  // A kernel that may flush subnormals (spec `subnormals: flush`): an absolute
  // allowance added to every finite element, and NaN accepted where the
  // reference is infinite (a flushed factor of an infinite product gives 0*Inf).
  double abs_extra = 0;
  bool inf_may_be_nan = false;
  // Absolute error near zero of converting inputs into a narrower compute
  // type and of underflow in a coarser accumulator. Capped per element at
  // 3 * bound: rounding near zero moves a value by at most its own size, so
  // each product's share is at most 3 |alpha a b| (and 0 where bound is 0).
  double abs_floor = 0;
  // A finite reference whose bound exceeds this may come back as any of
  // +-Inf and NaN: the claimed compute type's accumulator overflows there.
  double nonfinite_above = INFINITY;
};

struct BadElement {
  int tensor = 0;                // which of the case's tensors (the op's judge sets it)
  int64_t row = 0, col = 0;      // in the tensor's matrix view (core/tensor_geom.h)
  double expected = 0, got = 0;  // expected: reference rounded to the output type
  double ulps = 0, ratio = 0;    // ratio: |got - expected| / allowed error
};

struct CompareStats {
  int64_t checked = 0, exact_checked = 0;
  int64_t bad = 0, bad_class = 0, unwritten = 0;
  double max_ulps = 0, max_ratio = 0;
  std::vector<BadElement> first_bad;  // a few, in index order
  // Over the elements where the output and the exact reference are both
  // finite: how many, and the sum of the squared errors (aggregate rules).
  int64_t finite = 0;
  double sq_error = 0;
  // An aggregate rule the elements broke together though each passed alone
  // (the bench's precision rule, docs/tolerance.md): a mismatch, and why.
  std::string excess;
};

// Distance in units in the last place of t between two values of t.
double ulp_distance(DType t, double x, double y);
// Spacing of t around |x| (the subnormal spacing below the smallest normal).
double ulp_of(DType t, double x);

// `out` points at the output's data start (its geometry g); ref, bound and
// terms (the size of the epilogue's terms, may be null when u_epilogue is 0)
// are g.rows() * g.cols() doubles, row-major. class_refs: more references (each
// at as many doubles), on the inputs converted into the compute type, whose
// NaN/Inf class an element may also have (docs/tolerance.md, "Narrow compute").
CompareStats compare(const Tolerance& tol, const TensorGeom& g, const std::byte* out, const double* ref,
                     const double* bound, const double* terms = nullptr,
                     std::span<const double* const> class_refs = {});
// Adds `block`, the stats of rows row0.. compared on their own, to `total`;
// blocks come in row order, so first_bad stays the first few in index order.
void accumulate(CompareStats& total, const CompareStats& block, int64_t row0);
// pass, unwritten_output, nan_mismatch or mismatch.
Verdict verdict_of(const CompareStats& s);

}  // namespace assay
