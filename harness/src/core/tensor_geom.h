// Where the elements of one 2-D tensor live inside its buffer: strides and
// base offset in elements, as in DLPack.
#pragma once
#include <cstdint>

#include "core/dtype.h"
#include "core/hd.h"

namespace assay {

struct TensorGeom {
  DType dtype = DType::f32;
  int64_t rows = 0, cols = 0;
  int64_t row_stride = 0, col_stride = 1;  // elements
  int64_t offset = 0;                      // elements from the buffer's data start

  ASSAY_HD int64_t index(int64_t r, int64_t c) const { return offset + r * row_stride + c * col_stride; }
  ASSAY_HD int64_t count() const { return rows * cols; }
  // Elements from the data start to one past the last element reachable.
  ASSAY_HD int64_t span() const {
    if (rows == 0 || cols == 0) return offset;
    return index(rows - 1, cols - 1) + 1;
  }
  bool row_major() const { return col_stride == 1 && row_stride >= cols; }
  bool col_major() const { return row_stride == 1 && col_stride >= rows; }
  bool contiguous() const { return col_stride == 1 && (row_stride == cols || rows <= 1); }
  // The larger stride: the BLAS leading dimension for row- or column-major.
  int64_t leading() const { return row_stride > col_stride ? row_stride : col_stride; }
};

}  // namespace assay
