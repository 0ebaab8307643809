// What a GEMM reference reads: the operand buffers exactly as the candidate
// saw them (widened exactly to double), and what it writes: the FP64 result
// the error-bound magnitude |alpha||A||B| + |beta||C0|, and the size of the
// epilogue's two terms |alpha*A*B| + |beta*C0|; all m x n row-major.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/hd.h"
#include "core/tensor_geom.h"

namespace assay::reference {

// Block scales of a quantized operand (fp8_gemm): element (r, c) stands for
// its stored value times scale(r / rows_per, c / cols_per). An FP8 value
// times an f32 scale is exact in double (4 + 24 significant bits).
struct BlockScale {
  const std::byte* data = nullptr;  // nullptr: the operand is not scaled
  TensorGeom g;
  int64_t rows_per = 1, cols_per = 1;
};

struct GemmOperands {
  const std::byte* a; TensorGeom ga;   // m x k
  const std::byte* b; TensorGeom gb;   // k x n
  const std::byte* c0; TensorGeom gc;  // m x n initial C; unused (may be null) when beta == 0
  double alpha, beta;
  BlockScale sa = {}, sb = {};         // A's and B's block scales, if any
};

// Operand element (r, c) widened exactly to double, its block scale applied.
ASSAY_HD double operand_value(const std::byte* base, const TensorGeom& g, const BlockScale& s, int64_t r, int64_t c) {
  double v = decode(g.dtype, load_bits(g.dtype, base + g.index(r, c) * dtype_bytes(g.dtype)));
  if (s.data)
    v *= decode(s.g.dtype, load_bits(s.g.dtype, s.data + s.g.index(r / s.rows_per, c / s.cols_per) * dtype_bytes(s.g.dtype)));
  return v;
}

// BLAS semantics: alpha == 0 means A*B is not referenced, beta == 0 means C0 is not read.
struct GemmResult {
  double* ref;
  double* bound;
  double* terms;
};

// The references hand their results over in blocks of whole rows, so the
// host never holds three m x n arrays of doubles (24 bytes per output
// element: 48 GiB for a 2^31-element C): block i covers rows [row0, row0 +
// rows), its arrays rows x n, row-major.
using RowBlockVisitor = std::function<void(int64_t row0, int64_t rows, const GemmResult& block)>;
// Elements of C in one block (at least one row). `extra_cols`: the block's
// other per-row scratch (the host reference widens A's rows of a block too).
inline constexpr int64_t kReferenceBlockElements = int64_t(1) << 22;
inline int64_t reference_block_rows(int64_t m, int64_t n, int64_t extra_cols) {
  const int64_t per_row = n + extra_cols > 0 ? n + extra_cols : 1;
  int64_t rows = kReferenceBlockElements / per_row;
  if (rows < 1) rows = 1;
  return rows < m ? rows : (m > 0 ? m : 1);
}

// Element figures of the result from its products: alpha*AB + beta*C0, the
// bound |alpha||A||B| + |beta||C0| and the terms |alpha*AB| + |beta*C0|.
struct Combined {
  double ref, bound, terms;
};
ASSAY_HD Combined combined(double ab, double abs_ab, double c0, double alpha, double beta) {
  double r = alpha == 0.0 ? 0.0 : alpha * ab;
  double e = alpha == 0.0 ? 0.0 : fabs(alpha) * abs_ab;
  double t = fabs(r);
  if (beta != 0.0) {
    r += beta * c0;
    e += fabs(beta) * fabs(c0);
    t += fabs(beta * c0);
  }
  return {r, e, t};
}
ASSAY_HD void combine(double ab, double abs_ab, double c0, double alpha, double beta, const GemmResult& out,
                      int64_t i) {
  const Combined x = combined(ab, abs_ab, c0, alpha, beta);
  out.ref[i] = x.ref;
  out.bound[i] = x.bound;
  out.terms[i] = x.terms;
}

}  // namespace assay::reference
