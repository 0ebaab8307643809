#include "ops/softmax/softmax_reference_host.h"

namespace assay::softmax {

void reference_host(const std::byte* x, const TensorGeom& g, const ErrorModel& e, int64_t row0, int64_t rows,
                    double* ref, double* bound) {
  const int64_t n = g.cols();
  const int size = dtype_bytes(g.dtype);
  auto at = [&](int64_t r, int64_t c) { return decode(g.dtype, load_bits(g.dtype, x + g.index(r, c) * size)); };
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = row0 + r;
    RowMax mx;
    for (int64_t c = 0; c < n; ++c) add(mx, at(row, c));
    RowSum sum;
    if (!mx.nan && mx.m > -INFINITY && mx.m < INFINITY)
      for (int64_t c = 0; c < n; ++c) add(sum, e, at(row, c), mx.m);
    const RowStats st = finish(e, mx, sum);
    for (int64_t c = 0; c < n; ++c) element(e, st, at(row, c), ref + r * n + c, bound + r * n + c);
  }
}

}  // namespace assay::softmax
