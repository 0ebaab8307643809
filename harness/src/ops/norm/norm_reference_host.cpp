// Host reference: straight loops over the inputs' geometries (host memory).
#include "ops/norm/norm_reference.h"

namespace assay::norm {

void reference_host(const Inputs& in, const ErrorModel& e, int64_t row0, int64_t rows, const BlockOut& out) {
  const int64_t n = in.gx.cols();
  auto load = [](const std::byte* p, const TensorGeom& g, int64_t r, int64_t c) {
    return decode(g.dtype, load_bits(g.dtype, p + g.index(r, c) * dtype_bytes(g.dtype)));
  };
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = row0 + r;
    RowPass1 p1;
    for (int64_t c = 0; c < n; ++c) add(p1, load(in.x, in.gx, row, c));
    RowPass2 p2;
    if (!e.rms && p1.count > 0 && finite_row(p1)) {
      const double mean = row_mean(p1);
      for (int64_t c = 0; c < n; ++c) add(p2, load(in.x, in.gx, row, c), mean);
    }
    const RowStats st = finish(e, p1, p2);
    out.stat[MeanRef][r] = st.mean, out.stat[MeanBound][r] = st.mean_bound;
    out.stat[RstdRef][r] = st.rstd, out.stat[RstdBound][r] = st.rstd_bound;
    for (int64_t c = 0; c < n; ++c) {
      const double w = load(in.w, in.gw, 0, c), b = in.b ? load(in.b, in.gb, 0, c) : 0.0;
      element(e, st, load(in.x, in.gx, row, c), w, b, out.y_ref + r * n + c, out.y_bound + r * n + c);
    }
  }
}

}  // namespace assay::norm
