#include "ops/gemm/gemm_reference_host.h"

#include <algorithm>
#include <vector>

#include <Eigen/Dense>

namespace assay::reference {
namespace {

using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Rows [row0, row0 + rows) of a strided tensor, widened exactly with its
// block scales applied (or their absolute values).
Mat widen(const std::byte* base, const TensorGeom& g, const BlockScale& scale, int64_t row0, int64_t rows,
          bool absolute) {
  Mat m(rows, g.cols());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < g.cols(); ++c) {
      double v = operand_value(base, g, scale, row0 + r, c);
      m(r, c) = absolute ? std::fabs(v) : v;
    }
  return m;
}

}  // namespace

void gemm_eigen(const GemmOperands& op, const RowBlockVisitor& visit) {
  const int64_t m = op.gc.rows(), n = op.gc.cols(), k = op.ga.cols();
  if (m == 0 || n == 0) return;
  const bool product = op.alpha != 0.0 && k > 0;
  Mat b, b_abs;
  if (product) b = widen(op.b, op.gb, op.sb, 0, k, false), b_abs = widen(op.b, op.gb, op.sb, 0, k, true);
  const int64_t block = reference_block_rows(m, n, k);
  std::vector<double> ref(size_t(block * n)), bound(size_t(block * n)), terms(size_t(block * n));
  const GemmResult out{ref.data(), bound.data(), terms.data()};
  const int size = dtype_bytes(op.gc.dtype);
  Mat ab, abs_ab;
  for (int64_t row0 = 0; row0 < m; row0 += block) {
    const int64_t rows = std::min(block, m - row0);
    if (product) {
      ab.noalias() = widen(op.a, op.ga, op.sa, row0, rows, false) * b;
      abs_ab.noalias() = widen(op.a, op.ga, op.sa, row0, rows, true) * b_abs;
    } else {
      ab = Mat::Zero(rows, n), abs_ab = Mat::Zero(rows, n);
    }
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < n; ++c) {
        const double c0 =
            op.beta == 0.0 ? 0.0 : decode(op.gc.dtype, load_bits(op.gc.dtype, op.c0 + op.gc.index(row0 + r, c) * size));
        combine(ab(r, c), abs_ab(r, c), c0, op.alpha, op.beta, out, r * n + c);
      }
    visit(row0, rows, out);
  }
}

}  // namespace assay::reference
