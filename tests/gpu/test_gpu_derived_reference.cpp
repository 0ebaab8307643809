// Call 3 of a case is call 2's inputs with a sparse change (docs/cases.md),
// so on cuda GEMM derives its reference from call 2's FP64 products,
// recomputing only the rows and columns of C the change touches. The derived
// reference must be the full one (to FP64 rounding), for every kind of change.
#include <catch2/catch.hpp>

#include <cmath>
#include <iomanip>
#include <map>

#include "backend/backend.h"
#include "exec/guarded_tensor.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_reference.h"
#include "gemm_cases.h"

using namespace assay;

namespace {

gemm::Problem problem_for(uint64_t i, DType t) {
  gemm::Problem c = test::varied_gemm_case(i, t, 45, 37, 1, 5000);
  if (i % 11 == 10) {  // past one reference block of small cases
    c.m = 300, c.n = 260, c.k = 200;
    c.a = gemm::make_layout(c.m, c.k, i % 2, i % 3, i % 2);
    c.b = gemm::make_layout(c.k, c.n, (i / 2) % 2, 0, i % 3 == 1);
    c.c = gemm::make_layout(c.m, c.n, (i / 3) % 2, i % 4, 0);
  }
  return c;
}

struct Operands {
  std::unique_ptr<GuardedTensor> t[3];
  // Draws A, B and C0 with `change` applied (tensor < 0: none), moved round
  // by `moved` (empty: not).
  void draw(Backend& be, const gemm::Problem& c, const SparseChange& change, const Relabeling& moved = {}) {
    auto g = gemm::tensors(c);
    for (int i = 0; i < 3; ++i) {
      if (!t[i]) t[i] = std::make_unique<GuardedTensor>(be, g[i]);
      t[i]->paint_canary();
      TensorGeom shifted = g[i];
      shifted.offset += int64_t(t[i]->guard() / dtype_bytes(g[i].dtype));
      RecipeParams p = gemm::recipe_params(c, gemm::Operand(i));
      if (i == change.tensor) p.patch = change.patch;
      if (size_t(i) < moved.of.size()) p.rotation = moved.of[size_t(i)];
      be.fill_tensor(t[i]->buffer(), shifted, p, c.seed, uint32_t(i));
    }
  }
};

gemm::ReferenceResult reference_of(Backend& be, const gemm::Problem& c, Operands& o,
                                   reference::ProductReuse* reuse) {
  gemm::ReferenceResult r;
  const size_t count = size_t(c.m * c.n);
  r.ref.resize(count), r.bound.resize(count), r.terms.resize(count);
  gemm::reference_rows(be, c, o.t[0]->data(), o.t[1]->data(), o.t[2]->data(),
                       [&](int64_t row0, int64_t rows, const reference::GemmResult& block) {
                         const size_t at = size_t(row0 * c.n), len = size_t(rows * c.n);
                         std::copy(block.ref, block.ref + len, r.ref.begin() + at);
                         std::copy(block.bound, block.bound + len, r.bound.begin() + at);
                         std::copy(block.terms, block.terms + len, r.terms.begin() + at);
                       },
                       ResultsIn::host, reuse);
  return r;
}

bool same_value(double x, double y, double bound) {
  if (std::isnan(y)) return std::isnan(x);
  if (std::isinf(y)) return x == y;
  return std::fabs(x - y) <= 1e-13 * (std::fabs(bound) + 1e-300);
}

// How many elements of `derived` are not `full`'s (to FP64 rounding); the
// first one in the test's log.
size_t differences(const gemm::ReferenceResult& derived, const gemm::ReferenceResult& full) {
  size_t bad = 0, first_bad = 0;
  for (size_t e = 0; e < full.ref.size(); ++e) {
    const bool same = same_value(derived.ref[e], full.ref[e], full.bound[e]) &&
                      same_value(derived.bound[e], full.bound[e], full.bound[e]) &&
                      same_value(derived.terms[e], full.terms[e], full.bound[e]);
    if (!same && bad++ == 0) first_bad = e;
  }
  if (bad)
    UNSCOPED_INFO(bad << " of " << full.ref.size() << " differ, first at " << first_bad << std::setprecision(17)
                      << ": ref " << derived.ref[first_bad] << " / " << full.ref[first_bad] << ", bound "
                      << derived.bound[first_bad] << " / " << full.bound[first_bad] << ", terms "
                      << derived.terms[first_bad] << " / " << full.terms[first_bad]);
  return bad;
}

}  // namespace

TEST_CASE("a sparse change's derived GEMM reference equals the full one", "[gpu][reference][derived]") {
  auto gpu = make_backend(BackendKind::cuda);
  std::map<int, int> derived_by_tensor;  // which kinds of change were derived
  for (DType t : {DType::f64, DType::f32, DType::f16})
    for (uint64_t i = 0; i < 44; ++i) {
      const gemm::Problem c = problem_for(i, t);
      const SparseChange change = gemm::sparse_change(c);
      INFO(describe(gemm::to_case(c)) << ", change of tensor " << change.tensor << " (row " << change.patch.row
                                      << ", " << change.patch.listed << " listed)");
      Operands o;
      reference::KeptProducts kept;
      reference::ProductReuse first;
      first.kept = &kept;
      o.draw(*gpu, c, SparseChange{});
      reference_of(*gpu, c, o, &first);  // call 2: computed whole and kept
      CHECK_FALSE(first.derived);

      o.draw(*gpu, c, change);  // call 3
      reference::ProductReuse next;
      next.kept = &kept;
      next.derivable = gemm::changed_parts(change, next.changed_rows, next.changed_cols);
      const gemm::ReferenceResult derived = reference_of(*gpu, c, o, &next);
      const gemm::ReferenceResult full = reference_of(*gpu, c, o, nullptr);
      CHECK(next.derived == next.derivable);
      if (next.derived) ++derived_by_tensor[change.tensor];
      // Each within FP64 rounding of the full one: the row and column DGEMMs
      // sum the same k products, maybe in another order.
      CHECK(differences(derived, full) == 0);
    }
  // Each kind of change was derived at least once: rows of A, columns of B, C0.
  CHECK(derived_by_tensor[gemm::A] > 0);
  CHECK(derived_by_tensor[gemm::B] > 0);
  CHECK(derived_by_tensor[gemm::C] > 0);
}

TEST_CASE("a relabelled call's derived GEMM reference equals the full one", "[gpu][reference][derived]") {
  auto gpu = make_backend(BackendKind::cuda);
  int moved_cases = 0;
  for (DType t : {DType::f64, DType::f32, DType::f16})
    for (uint64_t i = 0; i < 44; ++i) {
      const gemm::Problem c = problem_for(i, t);
      const Relabeling moved = gemm::relabeling(c);
      INFO(describe(gemm::to_case(c)));
      if (!moved.any()) continue;  // m = n = 1: call 2 is drawn afresh
      ++moved_cases;
      Operands o;
      reference::KeptProducts kept;
      reference::ProductReuse first;
      first.kept = &kept;
      o.draw(*gpu, c, SparseChange{});
      reference_of(*gpu, c, o, &first);  // call 1
      o.draw(*gpu, c, SparseChange{}, moved);  // call 2
      reference::ProductReuse next;
      next.kept = &kept;
      next.derivable = true;
      next.rotate_rows = moved.of[gemm::C].by_rows, next.rotate_cols = moved.of[gemm::C].by_cols;
      const gemm::ReferenceResult derived = reference_of(*gpu, c, o, &next);
      const gemm::ReferenceResult full = reference_of(*gpu, c, o, nullptr);
      CHECK(next.derived);
      CHECK(differences(derived, full) == 0);
      // And call 3, derived from the moved products, as the executor does.
      const SparseChange change = gemm::sparse_change(c);
      o.draw(*gpu, c, change, moved);
      reference::ProductReuse third;
      third.kept = &kept;
      third.derivable = gemm::changed_parts(change, third.changed_rows, third.changed_cols);
      const gemm::ReferenceResult derived3 = reference_of(*gpu, c, o, &third);
      CHECK(differences(derived3, reference_of(*gpu, c, o, nullptr)) == 0);
    }
  CHECK(moved_cases > 100);
}
