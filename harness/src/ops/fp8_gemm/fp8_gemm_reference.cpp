#include "ops/fp8_gemm/fp8_gemm_reference.h"

#include <algorithm>
#include <cmath>

#include "ops/fp8_gemm/fp8_gemm_reference_cuda.h"
#include "ops/op.h"
#include "ops/gemm/gemm_reference.h"

namespace assay::fp8_gemm {
namespace {

std::vector<double> row_abs_max_host(const std::byte* base, const TensorGeom& g) {
  std::vector<double> out(size_t(g.rows()), 0.0);
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = 0; r < g.rows(); ++r)
    for (int64_t c = 0; c < g.cols(); ++c) {
      const double v = std::fabs(decode(g.dtype, load_bits(g.dtype, base + g.index(r, c) * size)));
      if (std::isfinite(v)) out[size_t(r)] = std::max(out[size_t(r)], v);
    }
  return out;
}

// The operands as the GEMM reference reads them: A = a [m, k] with a_scale
// per 1 x 128 block; B = bᵀ [k, n] (b's [n, k] strides swapped) with
// b_scale [nb, kb] seen as [kb, nb], one scale per 128 x 128 block.
reference::GemmOperands operands(const Case& c, std::span<const std::byte* const> device) {
  const TensorGeom ga = c.geom(A), gas = c.geom(AS), gb = c.geom(B), gbs = c.geom(BS);
  const TensorGeom bt = TensorGeom::matrix(gb.dtype, gb.shape[1], gb.shape[0], gb.strides[1], gb.strides[0], gb.offset);
  const TensorGeom bst =
      TensorGeom::matrix(gbs.dtype, gbs.shape[1], gbs.shape[0], gbs.strides[1], gbs.strides[0], gbs.offset);
  reference::GemmOperands op{device[A], ga, device[B], bt, nullptr, c.geom(D), 1.0, 0.0};
  op.sa = reference::BlockScale{device[AS], gas, 1, kScaleBlock};
  op.sb = reference::BlockScale{device[BS], bst, kScaleBlock, kScaleBlock};
  return op;
}

void gemm_blocks(Backend& backend, const Case& c, std::span<const std::byte* const> device,
                 const reference::RowBlockVisitor& visit, ResultsIn where = ResultsIn::host) {
  gemm::reference_on(backend, operands(c, device), visit, where);
}

}  // namespace

RowMaxima row_maxima(Backend& backend, const Case& c, std::span<const std::byte* const> device) {
  const std::byte* const base[] = {device[A], device[AS], device[B], device[BS]};
  const TensorGeom g[] = {c.geom(A), c.geom(AS), c.geom(B), c.geom(BS)};
  std::vector<std::vector<double>> m(4);
  if (backend.kind() == BackendKind::cuda) row_abs_max_cuda(backend.stream(), base, g, 4, m);
  else
    for (int t = 0; t < 4; ++t) m[size_t(t)] = row_abs_max_host(base[t], g[t]);
  return RowMaxima{std::move(m[0]), std::move(m[1]), std::move(m[2]), std::move(m[3])};
}

double error_floor(const ErrorModel& e, const RowMaxima& r, int64_t k, int64_t i, int64_t j) {
  return floor_of(e, k, r.a[size_t(i)], r.a_scale[size_t(i)], r.b[size_t(j)], r.b_scale[size_t(j / kScaleBlock)]);
}

void reference_blocks(Backend& backend, const Case& c, std::span<const std::byte* const> device,
                      const ErrorModel& e, const BlockVisitor& visit, ResultsIn where) {
  static_assert(kFloorBlock == kScaleBlock);
  const Sizes z = sizes_of(c);
  const RowMaxima rm = row_maxima(backend, c, device);
  const bool on_device = backend.kind() == BackendKind::cuda && where == ResultsIn::backend;
  // The bound finished in place, where the block lives.
  gemm_blocks(backend, c, device, [&](int64_t row0, int64_t rows, const reference::GemmResult& blk) {
    if (on_device) {
      const double* const maxima[4] = {rm.a.data(), rm.a_scale.data(), rm.b.data(), rm.b_scale.data()};
      const size_t sizes[4] = {rm.a.size(), rm.a_scale.size(), rm.b.size(), rm.b_scale.size()};
      finish_bound_cuda(backend.stream(), blk.bound, row0, rows, z.n, z.k, e, maxima, sizes);
    } else {
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < z.n; ++j) {
          const size_t at = size_t(r * z.n + j);
          blk.bound[at] = e.rel * blk.bound[at] + error_floor(e, rm, z.k, row0 + r, j);
        }
    }
    visit(row0, rows, blk.ref, blk.bound);
  }, where);
}

std::vector<std::vector<double>> reference_arrays(Backend& backend, const Case& c,
                                                  std::span<const std::byte* const> device) {
  const Sizes z = sizes_of(c);
  std::vector<std::vector<double>> out(c.tensors.size());
  out[D].assign(size_t(z.m * z.n), 0.0);
  gemm_blocks(backend, c, device, [&](int64_t row0, int64_t rows, const reference::GemmResult& blk) {
    std::copy(blk.ref, blk.ref + rows * z.n, out[D].begin() + row0 * z.n);
  });
  return out;
}

CompareStats compare_case(Backend& backend, const Case& c, std::span<const std::byte* const> device,
                          std::span<const std::byte* const> out, const ErrorModel& e, const Tolerance& tol,
                          const Deadline& deadline, std::vector<std::vector<double>>* keep_ref,
                          std::vector<std::vector<double>>* keep_bound) {
  const Sizes z = sizes_of(c);
  const TensorGeom g = c.geom(D);
  if (keep_ref) {
    keep_ref->assign(c.tensors.size(), {}), keep_bound->assign(c.tensors.size(), {});
    (*keep_ref)[D].assign(size_t(z.m * z.n), 0.0), (*keep_bound)[D] = (*keep_ref)[D];
  }
  CompareStats total;
  reference_blocks(backend, c, device, e, [&](int64_t row0, int64_t rows, const double* ref, const double* bound) {
    // Between blocks only: a case of one block is judged whole.
    if (row0 > 0 && deadline.passed()) throw DeadlineReached("the comparison was still running at the deadline");
    TensorGeom part = g;  // rows [row0, row0 + rows) of d
    part.shape[0] = rows, part.offset = g.offset + row0 * g.strides[0];
    accumulate(total, backend.compare(tol, part, out[D], ref, bound, nullptr, {}), row0);
    if (keep_ref) {
      read_doubles(backend, ref, size_t(rows * z.n), (*keep_ref)[D].data() + row0 * z.n);
      read_doubles(backend, bound, size_t(rows * z.n), (*keep_bound)[D].data() + row0 * z.n);
    }
  }, ResultsIn::backend);
  for (BadElement& b : total.first_bad) b.tensor = D;
  return total;
}

}  // namespace assay::fp8_gemm
