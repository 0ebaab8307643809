#include "reference/host/gemm_eigen.h"

#include <Eigen/Dense>

namespace assay::reference {
namespace {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Mat widen(const std::byte* base, const TensorGeom& g, bool absolute) {
  Mat m(g.rows, g.cols);
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t c = 0; c < g.cols; ++c) {
      double v = decode(g.dtype, load_bits(g.dtype, base + g.index(r, c) * size));
      m(r, c) = absolute ? std::fabs(v) : v;
    }
  return m;
}

}  // namespace

void gemm_eigen(const GemmOperands& op, const GemmResult& out) {
  const int64_t m = op.gc.rows, n = op.gc.cols;
  Mat ab = Mat::Zero(m, n), abs_ab = Mat::Zero(m, n);
  if (op.alpha != 0.0 && op.ga.cols > 0) {
    ab.noalias() = widen(op.a, op.ga, false) * widen(op.b, op.gb, false);
    abs_ab.noalias() = widen(op.a, op.ga, true) * widen(op.b, op.gb, true);
  }
  const int size = dtype_bytes(op.gc.dtype);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double c0 = op.beta == 0.0 ? 0.0 : decode(op.gc.dtype, load_bits(op.gc.dtype, op.c0 + op.gc.index(r, c) * size));
      combine(ab(r, c), abs_ab(r, c), c0, op.alpha, op.beta, out, r * n + c);
    }
}

}  // namespace assay::reference
