#include "ops/gemm/gemm_reference.h"

#include <algorithm>

#include "backend/cuda/cuda_backend.h"
#include "ops/gemm/gemm_problem.h"
#include "reference/device/gemm_cublas.h"
#include "reference/host/gemm_eigen.h"

namespace assay::gemm {

void reference_rows(Backend& backend, const Case& c, const std::byte* a, const std::byte* b, const std::byte* c0,
                    const reference::RowBlockVisitor& visit) {
  auto t = tensors(c);
  reference::GemmOperands op{a, t[A], b, t[B], c.beta != 0.0 ? c0 : nullptr, t[C], c.alpha, c.beta};
  if (backend.kind() == BackendKind::cuda) {
    auto& cuda = static_cast<CudaBackend&>(backend);
    reference::gemm_cublas(cuda.cublas(), cuda.stream(), op, visit);
  } else {
    reference::gemm_eigen(op, visit);
  }
}

ReferenceResult reference(Backend& backend, const Case& c, const std::byte* a, const std::byte* b,
                          const std::byte* c0) {
  ReferenceResult r;
  const size_t count = size_t(c.m * c.n);
  r.ref.resize(count), r.bound.resize(count), r.terms.resize(count);
  reference_rows(backend, c, a, b, c0, [&](int64_t row0, int64_t rows, const reference::GemmResult& block) {
    const size_t at = size_t(row0 * c.n), len = size_t(rows * c.n);
    std::copy(block.ref, block.ref + len, r.ref.begin() + at);
    std::copy(block.bound, block.bound + len, r.bound.begin() + at);
    std::copy(block.terms, block.terms + len, r.terms.begin() + at);
  });
  return r;
}

CompareStats compare_to_reference(Backend& backend, const Case& c, const Tolerance& tol, const std::byte* out,
                                  const std::byte* a, const std::byte* b, const std::byte* c0,
                                  const Deadline& deadline, ReferenceResult* keep) {
  const TensorGeom g = tensors(c)[C];
  CompareStats total;
  if (keep) keep->ref.resize(size_t(c.m * c.n)), keep->bound.resize(size_t(c.m * c.n));
  reference_rows(backend, c, a, b, c0, [&](int64_t row0, int64_t rows, const reference::GemmResult& block) {
    // Between blocks only: a case of one block (every planned one) is judged
    // whole, so calls that ran before the deadline keep their verdicts.
    if (row0 > 0 && deadline.passed()) throw DeadlineReached("the comparison was still running at the deadline");
    TensorGeom part = g;  // rows [row0, row0 + rows) of C: the same strides, the offset moved
    part.rows = rows, part.offset = g.offset + row0 * g.row_stride;
    accumulate(total, compare(tol, part, out, block.ref, block.bound, block.terms), row0);
    if (keep) {
      const size_t at = size_t(row0 * c.n), len = size_t(rows * c.n);
      std::copy(block.ref, block.ref + len, keep->ref.begin() + at);
      std::copy(block.bound, block.bound + len, keep->bound.begin() + at);
    }
  });
  return total;
}

}  // namespace assay::gemm
