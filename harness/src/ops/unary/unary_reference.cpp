#include "ops/unary/unary_reference.h"

#include <algorithm>

#include "ops/op.h"
#include "ops/unary/unary_reference_cuda.h"

namespace assay::unary {

void reference_host(const std::byte* x, const TensorGeom& g, const ErrorModel& e, double* ref, double* bound) {
  const int64_t rows = g.rows(), n = g.cols();
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c)
      element(e, decode(g.dtype, load_bits(g.dtype, x + g.index(r, c) * size)), ref + r * n + c, bound + r * n + c);
}

void reference_blocks(Backend& backend, const Shape& s, const TensorGeom& gx, const std::byte* x,
                      const ErrorModel& e, const BlockVisitor& visit, ResultsIn where) {
  const std::vector<rows::RowBlock> blocks = rows::row_blocks(s);
  if (s.n == 0) {
    for (const rows::RowBlock& b : blocks) visit(b, nullptr, nullptr);
    return;
  }
  const size_t most = size_t(rows::block_elements(s));
  BackendArray ref(backend, most), bound(backend, most);  // where the backend's data lives
  std::vector<double> host_ref, host_bound;
  for (const rows::RowBlock& b : blocks) {
    const TensorGeom g = rows::block_geom(gx, s, b);
    if (backend.kind() == BackendKind::cuda)
      reference_cuda(backend.stream(), x, g, e, ref.data(), bound.data());
    else
      reference_host(x, g, e, ref.data(), bound.data());
    const size_t count = size_t(b.rows * s.n);
    visit(b, ref.handed(where, count, host_ref), bound.handed(where, count, host_bound));
  }
}

CompareStats compare_blocks(Backend& backend, const Shape& s, const TensorGeom& gx, const std::byte* x,
                            const TensorGeom& gy, const std::byte* y, const ErrorModel& e, const Tolerance& tol,
                            const Deadline& deadline, std::vector<double>* keep_ref, std::vector<double>* keep_bound) {
  CompareStats total;
  const size_t n = size_t(s.n), all = size_t(s.total_rows()) * n;
  if (keep_ref) keep_ref->assign(all, 0.0), keep_bound->assign(all, 0.0);
  reference_blocks(backend, s, gx, x, e, [&](const rows::RowBlock& b, const double* ref, const double* bound) {
    if (b.row0 > 0 && deadline.passed()) throw DeadlineReached("the comparison was still running at the deadline");
    if (n == 0) return;
    accumulate(total, backend.compare(tol, rows::block_geom(gy, s, b), y, ref, bound, nullptr, {}), b.row0);
    if (keep_ref) {
      read_doubles(backend, ref, size_t(b.rows * s.n), keep_ref->data() + b.row0 * s.n);
      read_doubles(backend, bound, size_t(b.rows * s.n), keep_bound->data() + b.row0 * s.n);
    }
  }, ResultsIn::backend);
  for (BadElement& bad : total.first_bad) bad.tensor = Y;
  return total;
}

}  // namespace assay::unary
