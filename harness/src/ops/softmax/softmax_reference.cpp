#include "ops/softmax/softmax_reference.h"

#include <algorithm>

#include "ops/softmax/softmax_reference_cuda.h"
#include "ops/softmax/softmax_reference_host.h"

namespace assay::softmax {

std::vector<RowBlock> row_blocks(const Shape& s) {
  std::vector<RowBlock> out;
  const int64_t total = s.total_rows(), n = std::max<int64_t>(s.n, 1);
  if (total == 0) return out;
  const int64_t per_block = std::max<int64_t>(1, kBlockElements / n);
  if (!s.batched || s.rows * n <= kBlockElements) {
    // 2-D, or whole batches per block.
    const int64_t step = s.batched ? std::max<int64_t>(1, per_block / s.rows) * s.rows : per_block;
    for (int64_t r = 0; r < total; r += step) out.push_back({r, std::min(step, total - r)});
    return out;
  }
  for (int64_t b = 0; b < s.b; ++b)
    for (int64_t r = 0; r < s.rows; r += per_block) out.push_back({b * s.rows + r, std::min(per_block, s.rows - r)});
  return out;
}

double block_elements(const Shape& s) {
  double most = 0;
  const int64_t n = std::max<int64_t>(s.n, 1);
  for (const RowBlock& b : row_blocks(s)) most = std::max(most, double(b.rows) * double(n));
  return most;
}

TensorGeom block_geom(const TensorGeom& g, const Shape& s, const RowBlock& b) {
  TensorGeom part = g;
  if (g.ndim == 2) {
    part.shape[0] = b.rows, part.offset = g.offset + b.row0 * g.strides[0];
    return part;
  }
  // 3-D: whole batches, or rows of one batch as a 2-D geometry.
  if (b.row0 % s.rows == 0 && b.rows % s.rows == 0) {
    part.shape[0] = b.rows / s.rows, part.offset = g.offset + (b.row0 / s.rows) * g.strides[0];
    return part;
  }
  const int64_t batch = b.row0 / s.rows, r = b.row0 % s.rows;
  return TensorGeom::matrix(g.dtype, b.rows, g.shape[2], g.strides[1], g.strides[2],
                            g.offset + batch * g.strides[0] + r * g.strides[1]);
}

void reference_rows(Backend& backend, const Shape& s, const TensorGeom& gx, const std::byte* x, const ErrorModel& e,
                    const BlockVisitor& visit) {
  const std::vector<RowBlock> blocks = row_blocks(s);
  if (blocks.empty() || s.n == 0) {
    for (const RowBlock& b : blocks) visit(b, nullptr, nullptr);
    return;
  }
  const size_t most = size_t(block_elements(s));
  std::vector<double> ref(most), bound(most);
  for (const RowBlock& b : blocks) {
    if (backend.kind() == BackendKind::cuda)
      reference_cuda(backend.stream(), x, gx, e, b.row0, b.rows, ref.data(), bound.data());
    else
      reference_host(x, gx, e, b.row0, b.rows, ref.data(), bound.data());
    visit(b, ref.data(), bound.data());
  }
}

CompareStats compare_rows(Backend& backend, const Shape& s, const TensorGeom& gx, const std::byte* x,
                          const TensorGeom& gy, const std::byte* y, const ErrorModel& e, const Tolerance& tol,
                          const Deadline& deadline, std::vector<double>* keep_ref, std::vector<double>* keep_bound) {
  CompareStats total;
  const size_t n = size_t(s.n);
  if (keep_ref) keep_ref->assign(size_t(s.total_rows()) * n, 0.0), keep_bound->assign(size_t(s.total_rows()) * n, 0.0);
  reference_rows(backend, s, gx, x, e, [&](const RowBlock& b, const double* ref, const double* bound) {
    if (b.row0 > 0 && deadline.passed()) throw DeadlineReached("the comparison was still running at the deadline");
    if (n == 0) return;
    accumulate(total, compare(tol, block_geom(gy, s, b), y, ref, bound), b.row0);
    if (keep_ref) {
      std::copy(ref, ref + b.rows * s.n, keep_ref->begin() + b.row0 * s.n);
      std::copy(bound, bound + b.rows * s.n, keep_bound->begin() + b.row0 * s.n);
    }
  });
  for (BadElement& bad : total.first_bad) bad.tensor = Y;
  return total;
}

}  // namespace assay::softmax
