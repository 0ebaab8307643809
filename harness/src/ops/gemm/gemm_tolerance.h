// GEMM's tolerance model (docs/tolerance.md): an element passes when
//   |c - ref| <= T * u_eff * (|alpha||A||B| + |beta||C0|) + 1 ulp(ref)
// with u_eff from the claimed compute precision and k; exact recipes must match.
#pragma once
#include "case/case.h"
#include "ops/gemm/gemm_problem.h"
#include "judge/compare.h"
#include "spec/spec.h"

namespace assay::gemm {

// Default T, calibrated on the H200 (docs/results/) with margin.
inline constexpr double kDefaultScale = 2.0;

// `subnormals` is the spec's contract; `flush` adds flush_allowance().
Tolerance tolerance(const Problem& c, Compute compute, double scale, uint64_t poison_bits,
                    Subnormals subnormals = Subnormals::ieee);
// Largest |error| that flushing subnormals to zero can add to one element of
// the case (derived in gemm_tolerance.cpp and docs/tolerance.md).
double flush_allowance(const Problem& c, Compute compute);

// The precision a kernel of this compute type accumulates in: f16 for f16,
// f64 for f64, f32 otherwise (tf32 and bf16 products sum in f32's range).
Compute accumulator(Compute c);
// Whether converting values of storage type t into compute type c can change
// them (fewer bits, a narrower range or coarser subnormals).
bool converts(DType t, Compute c);
// Whether converting this case's drawn inputs into the compute type can
// change some element's NaN/Inf class (an input overflowing to Inf, or a
// subnormal rounding to 0 beside an Inf): then the class is also judged
// against a reference on the converted inputs (docs/tolerance.md).
bool needs_class_reference(const Problem& c, Compute compute);

// The aggregate precision rule (assay bench; docs/tolerance.md): "" or why
// the RMS error of s's elements is too large for the declared compute type.
// Applies to uniform-recipe cases whose compute type holds the inputs
// exactly (f32 or f64 compute), over at least kMinAggregate finite elements.
inline constexpr int64_t kMinAggregate = 4096;
std::string rms_excess(const Problem& c, Compute compute, const CompareStats& s);

}  // namespace assay::gemm
