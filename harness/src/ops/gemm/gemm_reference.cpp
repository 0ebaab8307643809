#include "ops/gemm/gemm_reference.h"

#include <algorithm>

#include "backend/cuda/cuda_backend.h"
#include "core/error.h"
#include "ops/op.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_tolerance.h"
#include "ops/gemm/gemm_reference_cuda.h"
#include "ops/gemm/gemm_reference_host.h"

namespace assay::gemm {
namespace {

reference::GemmOperands operands(const Problem& c, const std::byte* a, const std::byte* b, const std::byte* c0) {
  auto t = tensors(c);
  return {a, t[A], b, t[B], c.beta != 0.0 ? c0 : nullptr, t[C], c.alpha, c.beta};
}

}  // namespace

void reference_rows(Backend& backend, const Problem& c, const std::byte* a, const std::byte* b, const std::byte* c0,
                    const reference::RowBlockVisitor& visit, ResultsIn where, reference::ProductReuse* reuse) {
  reference_on(backend, operands(c, a, b, c0), visit, where, reuse);
}

void reference_on(Backend& backend, const reference::GemmOperands& op, const reference::RowBlockVisitor& visit,
                  ResultsIn where, reference::ProductReuse* reuse) {
  if (backend.kind() == BackendKind::cuda) {
    auto& cuda = static_cast<CudaBackend&>(backend);
    reference::gemm_cublas(cuda.cublas(), cuda.stream(), op, visit, where == ResultsIn::backend, reuse);
  } else {
    reference::gemm_eigen(op, visit);
  }
}

ReferenceResult reference(Backend& backend, const Problem& c, const std::byte* a, const std::byte* b,
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

ClassReferences::~ClassReferences() {
  for (Buffer& b : refs) backend.release(b);
}

void class_references(ClassReferences& out, const Problem& c, Compute compute, const std::array<RecipeParams, 3>& drawn,
                      uint64_t seed) {
  Backend& backend = out.backend;
  auto t = tensors(c);
  struct Scratch {  // released however the reference ends
    Backend& be;
    Buffer b[3];
    ~Scratch() {
      for (Buffer& x : b)
        if (x.data) be.release(x);
    }
  } scratch{backend, {}};
  auto draw = [&](int i, Compute into) {
    RecipeParams p = drawn[i];
    p.rounded_to = into;
    if (!scratch.b[i].data)
      scratch.b[i] = backend.allocate(size_t(std::max<int64_t>(t[i].span(), 1)) * dtype_bytes(t[i].dtype));
    backend.fill_tensor(scratch.b[i], t[i], p, seed, uint32_t(i));
  };
  // Each reference block copied where the data lives into one m x n array.
  auto ref = [&] {
    const size_t row_bytes = size_t(c.n) * sizeof(double);
    out.refs.push_back(backend.allocate(std::max<size_t>(size_t(c.m) * row_bytes, 1)));
    const Buffer whole = out.refs.back();
    reference_rows(backend, c, scratch.b[A].data, scratch.b[B].data, scratch.b[C].data,
                   [&](int64_t row0, int64_t rows, const reference::GemmResult& block) {
                     const size_t bytes = size_t(rows) * row_bytes;
                     backend.copy(Buffer{whole.data + size_t(row0) * row_bytes, bytes},
                                  Buffer{reinterpret_cast<std::byte*>(block.ref), bytes});
                   },
                   ResultsIn::backend);
  };
  draw(A, compute);
  draw(B, compute);
  if (reads_c0(c)) draw(C, Compute::f64);
  ref();
  if (reads_c0(c) && converts(c.c_type, accumulator(compute))) {
    draw(C, accumulator(compute));
    ref();
  }
}

CompareStats compare_to_reference(Backend& backend, const Problem& c, const Tolerance& tol, const std::byte* out,
                                  const std::byte* a, const std::byte* b, const std::byte* c0,
                                  const Deadline& deadline, ReferenceResult* keep, const ClassReferences* class_refs,
                                  reference::ProductReuse* reuse) {
  const TensorGeom g = tensors(c)[C];
  CompareStats total;
  if (keep) keep->ref.resize(size_t(c.m * c.n)), keep->bound.resize(size_t(c.m * c.n));
  ClassRefs classes;  // the class references' rows of this block
  if (class_refs && class_refs->refs.size() > size_t(ClassRefs::kMax)) throw InfraError("too many class references");
  if (backend.kind() == BackendKind::cuda && !keep) {  // one pass, the result formed as it is compared
    if (class_refs)
      for (const Buffer& r : class_refs->refs) classes.ref[classes.count++] = reinterpret_cast<const double*>(r.data);
    auto& cuda = static_cast<CudaBackend&>(backend);
    return reference::compare_with_products(cuda.cublas(), cuda.stream(), operands(c, a, b, c0), cuda.comparer(), tol,
                                            g, out, classes, reuse);
  }
  reference_rows(backend, c, a, b, c0, [&](int64_t row0, int64_t rows, const reference::GemmResult& block) {
    // Between blocks only: a case of one block (every planned one) is judged
    // whole, so calls that ran before the deadline keep their verdicts.
    if (row0 > 0 && deadline.passed()) throw DeadlineReached("the comparison was still running at the deadline");
    TensorGeom part = g;  // rows [row0, row0 + rows) of C: the same strides, the offset moved
    part.shape[0] = rows, part.offset = g.offset + row0 * g.row_stride();
    classes.count = 0;
    if (class_refs)
      for (const Buffer& r : class_refs->refs)
        classes.ref[classes.count++] = reinterpret_cast<const double*>(r.data) + row0 * c.n;
    accumulate(total, backend.compare(tol, part, out, block.ref, block.bound, block.terms, classes), row0);
    if (keep) {
      const size_t at = size_t(row0 * c.n), len = size_t(rows * c.n);
      read_doubles(backend, block.ref, len, keep->ref.data() + at);
      read_doubles(backend, block.bound, len, keep->bound.data() + at);
    }
  }, ResultsIn::backend, reuse);
  return total;
}

}  // namespace assay::gemm
