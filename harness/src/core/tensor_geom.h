// Where the elements of one N-D tensor (up to 6 dimensions) live inside its
// buffer: shape, strides and base offset in elements, as in DLPack.
//
// Value draws, keep lists, comparisons and dumps see every tensor as a
// matrix: its rows are all index combinations of the leading dimensions
// (row-major order), its columns the last dimension. A 2-D tensor's rows and
// columns are its own; a 1-D tensor is one row; a 0-D one is 1 x 1.
#pragma once
#include <cstdint>
#include <optional>

#include "core/dtype.h"
#include "core/hd.h"

namespace assay {

// a * b for non-negative extents, held at INT64_MAX where it would overflow:
// a case file admits strides and sizes whose product passes 2^63, and a
// layout predicate must still answer (such a span exceeds every stride).
ASSAY_HD int64_t saturating_mul(int64_t a, int64_t b) {
  constexpr int64_t kMax = INT64_MAX;
  if (a <= 0 || b <= 0) return a * b;  // zero, or a caller's signed value small enough
  return a > kMax / b ? kMax : a * b;
}

struct TensorGeom {
  static constexpr int kMaxDims = 6;
  DType dtype = DType::f32;
  int32_t ndim = 2;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};  // elements
  int64_t offset = 0;              // elements from the buffer's data start

  // A 2-D tensor (GEMM's operands).
  static TensorGeom matrix(DType t, int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride,
                           int64_t offset) {
    TensorGeom g;
    g.dtype = t, g.ndim = 2, g.offset = offset;
    g.shape[0] = rows, g.shape[1] = cols, g.strides[0] = row_stride, g.strides[1] = col_stride;
    return g;
  }

  ASSAY_HD int64_t cols() const { return ndim == 0 ? 1 : shape[ndim - 1]; }
  ASSAY_HD int64_t rows() const {
    int64_t r = 1;
    for (int d = 0; d + 1 < ndim; ++d) r *= shape[d];
    return r;
  }
  ASSAY_HD int64_t count() const { return rows() * cols(); }
  // The element at (row, col) of the matrix view, in elements from the data start.
  ASSAY_HD int64_t index(int64_t row, int64_t col) const {
    if (ndim == 0) return offset;
    // A matrix's rows are its own (no division: kernels index every element).
    if (ndim == 2) return offset + row * strides[0] + col * strides[1];
    int64_t at = offset + col * strides[ndim - 1];
    for (int d = ndim - 2; d >= 0; --d) {
      const int64_t extent = shape[d] > 0 ? shape[d] : 1;
      at += (row % extent) * strides[d];
      row /= extent;
    }
    return at;
  }
  // Elements from the data start to one past the last element reachable.
  ASSAY_HD int64_t span() const {
    if (count() == 0) return offset;
    int64_t last = offset;
    for (int d = 0; d < ndim; ++d) last += (shape[d] - 1) * strides[d];
    return last + 1;
  }
  // The innermost two dimensions' strides (a 1-D tensor's rows are 1 apart
  // in the matrix view only when it has one row: row_stride is then its size).
  ASSAY_HD int64_t col_stride() const { return ndim == 0 ? 1 : strides[ndim - 1]; }
  ASSAY_HD int64_t row_stride() const {
    return ndim >= 2 ? strides[ndim - 2] : saturating_mul(cols(), col_stride());
  }
  ASSAY_HD int64_t dim_rows() const { return ndim >= 2 ? shape[ndim - 2] : 1; }  // the second-to-last dimension
  // Row-major: the last dimension unit-stride, each other dimension at least
  // as far apart as the one inside it spans. Column-major: the transpose of
  // the innermost two (2-D notions; higher dimensions as for row-major).
  bool row_major() const {
    if (ndim == 0) return true;
    if (col_stride() != 1) return false;
    int64_t inner = cols();
    for (int d = ndim - 2; d >= 0; --d) {
      if (strides[d] < inner) return false;
      inner = saturating_mul(strides[d], shape[d]);
    }
    return true;
  }
  bool col_major() const {
    if (ndim < 2) return ndim == 0 || cols() <= 1 || col_stride() == 1;
    if (strides[ndim - 2] != 1 || strides[ndim - 1] < shape[ndim - 2]) return false;
    int64_t inner = saturating_mul(strides[ndim - 1], shape[ndim - 1]);
    for (int d = ndim - 3; d >= 0; --d) {
      if (strides[d] < inner) return false;
      inner = saturating_mul(strides[d], shape[d]);
    }
    return true;
  }
  // Compact row-major: the last dimension unit-stride, no gaps between the
  // others (an outer dimension of at most one element may have any stride).
  bool contiguous() const {
    if (ndim == 0) return true;
    if (col_stride() != 1) return false;
    int64_t expect = cols();
    for (int d = ndim - 2; d >= 0; --d) {
      if (shape[d] > 1 && strides[d] != expect) return false;
      expect = saturating_mul(expect, shape[d]);
    }
    return true;
  }
  // The matrix view's row stride when row r starts r * stride elements
  // after row 0, so (row, col) is at offset + row * stride + col *
  // col_stride(): every tensor of at most two dimensions, and an N-D one
  // whose leading dimensions of more than one element are each the stride
  // times the extents inside them apart (a compact one). Nothing otherwise
  // (index() then walks the dimensions). One row: 0.
  std::optional<int64_t> uniform_row_stride() const {
    int64_t stride = 0, inside = 0;  // inside: the extents from the innermost such dimension out
    for (int d = ndim - 2; d >= 0; --d) {
      if (shape[d] <= 1) continue;
      if (inside == 0) stride = strides[d], inside = 1;
      else if (strides[d] != saturating_mul(stride, inside)) return std::nullopt;
      inside = saturating_mul(inside, shape[d]);
    }
    return stride;
  }
  // Whether element (row, col) is the one a broadcast (stride-0) dimension's
  // shared memory holds: its coordinate along every such dimension is 0.
  // Fills write only these, so that a shared element gets one value on every
  // backend (a parallel fill would otherwise race its copies' draws).
  ASSAY_HD bool representative(int64_t row, int64_t col) const {
    if (ndim == 0) return true;
    if (strides[ndim - 1] == 0 && col != 0) return false;
    for (int d = ndim - 2; d >= 0; --d) {
      const int64_t extent = shape[d] > 0 ? shape[d] : 1;
      if (strides[d] == 0 && row % extent != 0) return false;
      row /= extent;
    }
    return true;
  }
  // Whether a broadcast dimension (stride 0, more than one element) exists.
  bool broadcasts() const {
    for (int d = 0; d < ndim; ++d)
      if (strides[d] == 0 && shape[d] > 1) return true;
    return false;
  }
  // Whether two distinct elements share memory other than through a
  // broadcast dimension (e.g. strides [1, 1]): such a layout has no one
  // value per address and is refused.
  bool overlaps() const {
    if (count() <= 1) return false;
    // Dimensions of more than one element and a nonzero stride, innermost
    // (smallest |stride|) first: each must clear the span of those inside it.
    int64_t st[kMaxDims], ex[kMaxDims];
    int n = 0;
    for (int d = 0; d < ndim; ++d)
      if (shape[d] > 1 && strides[d] != 0) st[n] = strides[d] < 0 ? -strides[d] : strides[d], ex[n++] = shape[d];
    for (int i = 1; i < n; ++i)
      for (int j = i; j > 0 && st[j] < st[j - 1]; --j) {
        int64_t a = st[j], b = ex[j];
        st[j] = st[j - 1], ex[j] = ex[j - 1], st[j - 1] = a, ex[j - 1] = b;
      }
    int64_t reach = 1;  // elements spanned by the dimensions so far, plus one
    for (int i = 0; i < n; ++i) {
      if (st[i] < reach) return true;
      const int64_t inner = saturating_mul(st[i], ex[i] - 1);
      reach = inner > INT64_MAX - reach ? INT64_MAX : inner + reach;
    }
    return false;
  }
  // Its elements fill [offset, span()) with no gap and none shared: every
  // byte there is an element's.
  bool dense() const {
    if (count() == 0 || broadcasts() || overlaps()) return false;
    for (int d = 0; d < ndim; ++d)
      if (strides[d] < 0) return false;
    return span() - offset == count();
  }
  // The larger of the innermost two strides: the BLAS leading dimension for
  // row- or column-major matrices.
  int64_t leading() const { return row_stride() > col_stride() ? row_stride() : col_stride(); }
};

}  // namespace assay
