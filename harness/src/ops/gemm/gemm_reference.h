// Picks the reference engine for where the data lives: Eigen for host
// buffers, cuBLAS FP64 for device buffers (reference/host, reference/device).
#pragma once
#include <array>
#include <vector>

#include "backend/backend.h"
#include "case/case.h"
#include "ops/gemm/gemm_problem.h"
#include "core/deadline.h"
#include "judge/compare.h"
#include "ops/gemm/gemm_operands.h"
#include "ops/gemm/gemm_reference_cuda.h"

namespace assay::gemm {

struct ReferenceResult {
  std::vector<double> ref, bound, terms;  // m*n each, row-major (ops/gemm/gemm_operands.h)
};

// The reference engine for where the operands live (cuBLAS DGEMM on the
// cuda backend, Eigen on the host), for any GemmOperands (fp8_gemm's
// block-scaled ones too).
// reuse: products kept between the calls of a case (cuda only; the host
// ignores it and computes whole).
void reference_on(Backend& backend, const reference::GemmOperands& op, const reference::RowBlockVisitor& visit,
                  ResultsIn where = ResultsIn::host, reference::ProductReuse* reuse = nullptr);

// a, b, c0 point at the operands' data starts in the backend's memory; c0 is
// ignored when beta == 0. The result in blocks of rows, in order
// (reference::reference_block_rows): the host holds one block at a time.
void reference_rows(Backend& backend, const Problem& c, const std::byte* a, const std::byte* b, const std::byte* c0,
                    const reference::RowBlockVisitor& visit, ResultsIn where = ResultsIn::host,
                    reference::ProductReuse* reuse = nullptr);
// The whole result at once (24 bytes per element of C: for small cases, dumps, baselines).
ReferenceResult reference(Backend& backend, const Problem& c, const std::byte* a, const std::byte* b,
                          const std::byte* c0);

// The class references, in the backend's memory (m*n doubles each).
struct ClassReferences {
  Backend& backend;
  std::vector<Buffer> refs;
  explicit ClassReferences(Backend& be) : backend(be) {}
  ~ClassReferences();
  ClassReferences(const ClassReferences&) = delete;
  ClassReferences& operator=(const ClassReferences&) = delete;
};
// FP64 results on the inputs converted into the compute type: A and B in
// `compute` with C0 as it is, and where C0 converts too, once more with C0 in
// the accumulator's type (kernels do either). The inputs are redrawn into
// scratch memory with `drawn`, the parameters the call's inputs were drawn
// with, and `seed`. Only their NaN/Inf classes are used
// (gemm::needs_class_reference).
void class_references(ClassReferences& out, const Problem& c, Compute compute, const std::array<RecipeParams, 3>& drawn,
                      uint64_t seed);

// Compares the output `out` (the backend's memory, at C's data start) with
// the reference where the data lives, so no m x n array of doubles is ever
// held on the host: on the cuda backend in one pass that forms each element
// from the FP64 products as it judges it (reference::compare_with_products),
// on the host (and for a dump) block by block (Backend::compare).
// Between blocks (never before the first), throws DeadlineReached once
// `deadline` has passed (a huge C takes seconds). `keep`, if given, receives the whole reference and bound
// (for dumps; 16 bytes per element). class_refs: class_references' results,
// whose NaN/Inf classes an element may also have.
CompareStats compare_to_reference(Backend& backend, const Problem& c, const Tolerance& tol, const std::byte* out,
                                  const std::byte* a, const std::byte* b, const std::byte* c0,
                                  const Deadline& deadline, ReferenceResult* keep = nullptr,
                                  const ClassReferences* class_refs = nullptr,
                                  reference::ProductReuse* reuse = nullptr);

}  // namespace assay::gemm
