// What a GEMM reference reads: the operand buffers exactly as the candidate
// saw them (widened exactly to double), and what it writes: the FP64 result
// the error-bound magnitude |alpha||A||B| + |beta||C0|, and the size of the
// epilogue's two terms |alpha*A*B| + |beta*C0|; all m x n row-major.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/hd.h"
#include "core/tensor_geom.h"

namespace assay::reference {

struct GemmOperands {
  const std::byte* a; TensorGeom ga;   // m x k
  const std::byte* b; TensorGeom gb;   // k x n
  const std::byte* c0; TensorGeom gc;  // m x n initial C; unused (may be null) when beta == 0
  double alpha, beta;
};

// BLAS semantics: alpha == 0 means A*B is not referenced, beta == 0 means C0 is not read.
struct GemmResult {
  double* ref;
  double* bound;
  double* terms;
};

ASSAY_HD void combine(double ab, double abs_ab, double c0, double alpha, double beta, const GemmResult& out,
                      int64_t i) {
  double r = alpha == 0.0 ? 0.0 : alpha * ab;
  double e = alpha == 0.0 ? 0.0 : fabs(alpha) * abs_ab;
  double t = fabs(r);
  if (beta != 0.0) {
    r += beta * c0;
    e += fabs(beta) * fabs(c0);
    t += fabs(beta * c0);
  }
  out.ref[i] = r;
  out.bound[i] = e;
  out.terms[i] = t;
}

}  // namespace assay::reference
