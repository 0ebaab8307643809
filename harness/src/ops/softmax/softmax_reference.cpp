#include "ops/softmax/softmax_reference.h"

#include <algorithm>

#include "ops/op.h"
#include "ops/softmax/softmax_reference_cuda.h"
#include "ops/softmax/softmax_reference_host.h"

namespace assay::softmax {

void reference_rows(Backend& backend, const Shape& s, const TensorGeom& gx, const std::byte* x, const ErrorModel& e,
                    const BlockVisitor& visit, ResultsIn where) {
  const std::vector<RowBlock> blocks = row_blocks(s);
  if (blocks.empty() || s.n == 0) {
    for (const RowBlock& b : blocks) visit(b, nullptr, nullptr);
    return;
  }
  const size_t most = size_t(block_elements(s));
  BackendArray ref(backend, most), bound(backend, most);  // where the backend's data lives
  std::vector<double> host_ref, host_bound;
  for (const RowBlock& b : blocks) {
    if (backend.kind() == BackendKind::cuda)
      reference_cuda(backend.stream(), x, gx, e, b.row0, b.rows, ref.data(), bound.data());
    else
      reference_host(x, gx, e, b.row0, b.rows, ref.data(), bound.data());
    const size_t count = size_t(b.rows * s.n);
    visit(b, ref.handed(where, count, host_ref), bound.handed(where, count, host_bound));
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
    accumulate(total, backend.compare(tol, block_geom(gy, s, b), y, ref, bound, nullptr, {}), b.row0);
    if (keep_ref) {
      read_doubles(backend, ref, size_t(b.rows * s.n), keep_ref->data() + b.row0 * s.n);
      read_doubles(backend, bound, size_t(b.rows * s.n), keep_bound->data() + b.row0 * s.n);
    }
  }, ResultsIn::backend);
  for (BadElement& bad : total.first_bad) bad.tensor = Y;
  return total;
}

}  // namespace assay::softmax
