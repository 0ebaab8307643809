#include "ops/reduce/reduce_reference.h"

#include <algorithm>

#include "ops/reduce/reduce_reference_cuda.h"

namespace assay::reduce {

void reference_host(const std::byte* x, const TensorGeom& g, const ErrorModel& e, int64_t row0, int64_t rows,
                    const double* got, double* ref, double* bound) {
  const int64_t n = g.cols();
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = row0 + r;
    auto at = [&](int64_t c) { return decode(g.dtype, load_bits(g.dtype, x + g.index(row, c) * size)); };
    reference_row(e, n, at, got ? got + r : nullptr, ref + r, bound + r);
  }
}

namespace {

// The kernel's answers for a block's rows, as doubles (ties: any needs them).
std::vector<double> answers(const TensorGeom& gy, const std::byte* y, const rows::Shape& s, const rows::RowBlock& b) {
  const TensorGeom part = rows::block_geom(gy, s, b);
  const int size = dtype_bytes(part.dtype);
  std::vector<double> out;
  out.reserve(size_t(b.rows));
  for (int64_t r = 0; r < part.rows(); ++r)
    for (int64_t c = 0; c < part.cols(); ++c)
      out.push_back(decode(part.dtype, load_bits(part.dtype, y + part.index(r, c) * size)));
  return out;
}

}  // namespace

void reference_rows(Backend& backend, const rows::Shape& s, const TensorGeom& gx, const std::byte* x,
                    const TensorGeom& gy, const std::byte* y, const ErrorModel& e, const BlockVisitor& visit) {
  const std::vector<rows::RowBlock> blocks = rows::row_blocks(s);
  size_t most = 0;
  for (const rows::RowBlock& b : blocks) most = std::max(most, size_t(b.rows));
  std::vector<double> ref(most), bound(most);
  const bool need_got = y && e.ties_any && is_arg(e.op);
  for (const rows::RowBlock& b : blocks) {
    const std::vector<double> got = need_got ? answers(gy, y, s, b) : std::vector<double>{};
    const double* g = need_got ? got.data() : nullptr;
    if (backend.kind() == BackendKind::cuda)
      reference_cuda(backend.stream(), x, gx, e, b.row0, b.rows, g, ref.data(), bound.data());
    else
      reference_host(x, gx, e, b.row0, b.rows, g, ref.data(), bound.data());
    visit(b, ref.data(), bound.data());
  }
}

CompareStats compare_rows(Backend& backend, const rows::Shape& s, const TensorGeom& gx, const std::byte* x,
                          const TensorGeom& gy, const std::byte* y, const ErrorModel& e, const Tolerance& tol,
                          const Deadline& deadline, std::vector<double>* keep_ref, std::vector<double>* keep_bound) {
  CompareStats total;
  const size_t count = size_t(s.total_rows());
  if (keep_ref) keep_ref->assign(count, 0.0), keep_bound->assign(count, 0.0);
  // y's matrix view: one row of `rows` elements (2-D cases) or b rows of them.
  const int64_t per_view_row = s.batched ? std::max<int64_t>(s.rows, 1) : std::max<int64_t>(s.total_rows(), 1);
  reference_rows(backend, s, gx, x, gy, y, e, [&](const rows::RowBlock& b, const double* ref, const double* bound) {
    if (b.row0 > 0 && deadline.passed()) throw DeadlineReached("the comparison was still running at the deadline");
    const TensorGeom part = rows::block_geom(gy, s, b);
    CompareStats block = compare(tol, part, y, ref, bound);
    for (BadElement& bad : block.first_bad) {  // back to y's own matrix view
      const int64_t at = b.row0 + bad.row * part.cols() + bad.col;
      bad.tensor = 1, bad.row = at / per_view_row, bad.col = at % per_view_row;
    }
    accumulate(total, block, 0);
    if (keep_ref) {
      std::copy(ref, ref + b.rows, keep_ref->begin() + b.row0);
      std::copy(bound, bound + b.rows, keep_bound->begin() + b.row0);
    }
  });
  return total;
}

}  // namespace assay::reduce
