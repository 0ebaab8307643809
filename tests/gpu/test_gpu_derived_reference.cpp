// Call 3 of a case is call 2's inputs with a sparse change (docs/cases.md),
// so on cuda GEMM derives its reference from call 2's FP64 products,
// recomputing only the rows and columns of C the change touches. The derived
// reference must be the full one (to FP64 rounding), for every kind of change.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
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

// Derived by DGEMMs of rows or columns: the same k products summed, maybe
// in another order. By a rank-1 update: up to kRankOneMaxShrink (2^12)
// times the earlier products' FP64 rounding, relative to the new bound.
constexpr double kSlices = 1e-13, kRankOne = 0x1p-36;

bool same_value(double x, double y, double bound, double within) {
  if (std::isnan(y)) return std::isnan(x);
  if (std::isinf(y)) return x == y;
  return std::fabs(x - y) <= within * (std::fabs(bound) + 1e-300);
}

// How many elements of `derived` are not `full`'s (to FP64 rounding, as
// `within` of the bound); the first one in the test's log.
size_t differences(const gemm::ReferenceResult& derived, const gemm::ReferenceResult& full, double within = kSlices) {
  size_t bad = 0, first_bad = 0;
  for (size_t e = 0; e < full.ref.size(); ++e) {
    const bool same = same_value(derived.ref[e], full.ref[e], full.bound[e], within) &&
                      same_value(derived.bound[e], full.bound[e], full.bound[e], within) &&
                      same_value(derived.terms[e], full.terms[e], full.bound[e], within);
    if (!same && bad++ == 0) first_bad = e;
  }
  if (bad)
    UNSCOPED_INFO(bad << " of " << full.ref.size() << " differ, first at " << first_bad << std::setprecision(17)
                      << ": ref " << derived.ref[first_bad] << " / " << full.ref[first_bad] << ", bound "
                      << derived.bound[first_bad] << " / " << full.bound[first_bad] << ", terms "
                      << derived.terms[first_bad] << " / " << full.terms[first_bad]);
  return bad;
}

// The reuse of a call whose next call makes `change` (a row of B kept for
// its rank-1 update, as GemmOp asks for a compute type coarser than FP64),
// and of that next call. Rank-1 updates at any size here (the executor's
// reuse makes them at 2^30 multiply-adds and more only).
reference::ProductReuse keeping(reference::KeptProducts& kept, const SparseChange& change, DType t) {
  reference::ProductReuse r;
  r.kept = &kept, r.rank_one_min_work = 0;
  if (change.tensor == gemm::B && change.patch.row >= 0 && t != DType::f64) r.keep_b_row = change.patch.row;
  return r;
}
reference::ProductReuse changed_by(reference::KeptProducts& kept, const SparseChange& change, DType t) {
  reference::ProductReuse r;
  r.kept = &kept, r.rank_one_min_work = 0;
  gemm::changed_parts(change, r.changed_rows, r.changed_cols, r.changed_b_row);
  r.derivable = r.changed_b_row < 0 || t != DType::f64;
  return r;
}

constexpr int kBRow = 3;  // derived_by's key for a row of B (rank-1)

}  // namespace

TEST_CASE("a sparse change's derived GEMM reference equals the full one", "[gpu][reference][derived]") {
  auto gpu = make_backend(BackendKind::cuda);
  std::map<int, int> derived_by;  // which kinds of change were derived: A, B, C or kBRow
  int refused = 0;
  for (DType t : {DType::f64, DType::f32, DType::f16})
    for (uint64_t i = 0; i < 44; ++i) {
      const gemm::Problem c = problem_for(i, t);
      const SparseChange change = gemm::sparse_change(c);
      INFO(describe(gemm::to_case(c)) << ", change of tensor " << change.tensor << " (row " << change.patch.row
                                      << ", " << change.patch.listed << " listed)");
      Operands o;
      reference::KeptProducts kept;
      reference::ProductReuse first = keeping(kept, change, t);
      o.draw(*gpu, c, SparseChange{});
      reference_of(*gpu, c, o, &first);  // call 2: computed whole and kept
      CHECK_FALSE(first.derived);

      o.draw(*gpu, c, change);  // call 3
      reference::ProductReuse next = changed_by(kept, change, t);
      const gemm::ReferenceResult derived = reference_of(*gpu, c, o, &next);
      const gemm::ReferenceResult full = reference_of(*gpu, c, o, nullptr);
      // A rank-1 update refused (not exact enough) is a whole recompute.
      CHECK(next.derived == (next.derivable && !next.rank_one_refused));
      refused += next.rank_one_refused;
      const bool rank_one = next.derived && next.changed_b_row >= 0;
      if (next.derived) ++derived_by[rank_one ? kBRow : change.tensor];
      CHECK(differences(derived, full, rank_one ? kRankOne : kSlices) == 0);
    }
  // Each kind of change was derived at least once: rows of A, columns of B,
  // C0, a row of B; and the refusals were the exception.
  CHECK(derived_by[gemm::A] > 0);
  CHECK(derived_by[gemm::B] > 0);
  CHECK(derived_by[gemm::C] > 0);
  CHECK(derived_by[kBRow] > 0);
  CHECK(refused < derived_by[kBRow]);
}

// A rank-1 update that would cancel most of |A||B| (a row of huge values
// replaced by ordinary ones) is refused: the products are computed whole,
// exactly as they are without the earlier call's.
TEST_CASE("a rank-1 GEMM derivation that would cancel is refused", "[gpu][reference][derived]") {
  auto gpu = make_backend(BackendKind::cuda);
  gemm::Problem c = problem_for(0, DType::f32);
  c.m = 6, c.n = 5, c.k = 4, c.alpha = 1, c.beta = 0;
  c.a = gemm::make_layout(c.m, c.k, false), c.b = gemm::make_layout(c.k, c.n, false),
  c.c = gemm::make_layout(c.m, c.n, false);
  auto g = gemm::tensors(c);
  std::unique_ptr<GuardedTensor> t[3];
  for (int i = 0; i < 3; ++i) t[i] = std::make_unique<GuardedTensor>(*gpu, g[i]);
  auto upload = [&](int i, const std::vector<float>& v) {
    std::vector<std::byte> image(t[i]->buffer().bytes);
    std::memcpy(image.data() + t[i]->guard(), v.data(), v.size() * sizeof(float));
    gpu->upload(t[i]->buffer(), image.data());
  };
  const int64_t row = 2;
  auto b_with = [&](float in_row) {
    std::vector<float> b(size_t(c.k * c.n));
    for (int64_t r = 0; r < c.k; ++r)
      for (int64_t j = 0; j < c.n; ++j) b[size_t(r * c.n + j)] = r == row ? in_row : 0.25f * float(j + 1);
    return b;
  };
  std::vector<float> a(size_t(c.m * c.k));
  for (size_t e = 0; e < a.size(); ++e) a[e] = 0.5f + float(e % 7);
  upload(0, a), upload(1, b_with(1e20f)), upload(2, std::vector<float>(size_t(c.m * c.n)));
  Operands o;
  for (int i = 0; i < 3; ++i) o.t[i] = std::move(t[i]);
  SparseChange change;
  change.tensor = gemm::B, change.patch.row = row;
  reference::KeptProducts kept;
  reference::ProductReuse first = keeping(kept, change, DType::f32);
  reference_of(*gpu, c, o, &first);
  REQUIRE(gpu->synchronize().empty());
  std::vector<std::byte> image(o.t[1]->buffer().bytes);
  std::vector<float> b = b_with(1.0f);
  std::memcpy(image.data() + o.t[1]->guard(), b.data(), b.size() * sizeof(float));
  gpu->upload(o.t[1]->buffer(), image.data());
  reference::ProductReuse next = changed_by(kept, change, DType::f32);
  const gemm::ReferenceResult derived = reference_of(*gpu, c, o, &next);
  CHECK(next.rank_one_refused);
  CHECK_FALSE(next.derived);
  CHECK(differences(derived, reference_of(*gpu, c, o, nullptr)) == 0);
  // The same change from an ordinary row is derived.
  reference::ProductReuse again = keeping(kept, change, DType::f32);
  reference_of(*gpu, c, o, &again);
  b = b_with(3.0f);
  std::memcpy(image.data() + o.t[1]->guard(), b.data(), b.size() * sizeof(float));
  gpu->upload(o.t[1]->buffer(), image.data());
  reference::ProductReuse third = changed_by(kept, change, DType::f32);
  const gemm::ReferenceResult derived3 = reference_of(*gpu, c, o, &third);
  CHECK(third.derived);
  CHECK(differences(derived3, reference_of(*gpu, c, o, nullptr), kRankOne) == 0);
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
      const SparseChange change = gemm::sparse_change(c);
      reference::ProductReuse next = keeping(kept, change, t);
      next.derivable = true;
      next.rotate_rows = moved.of[gemm::C].by_rows, next.rotate_cols = moved.of[gemm::C].by_cols;
      const gemm::ReferenceResult derived = reference_of(*gpu, c, o, &next);
      const gemm::ReferenceResult full = reference_of(*gpu, c, o, nullptr);
      CHECK(next.derived);
      CHECK(differences(derived, full) == 0);
      // And call 3, derived from the moved products, as the executor does.
      o.draw(*gpu, c, change, moved);
      reference::ProductReuse third = changed_by(kept, change, t);
      const gemm::ReferenceResult derived3 = reference_of(*gpu, c, o, &third);
      const bool rank_one = third.derived && third.changed_b_row >= 0;
      CHECK(differences(derived3, reference_of(*gpu, c, o, nullptr), rank_one ? kRankOne : kSlices) == 0);
    }
  CHECK(moved_cases > 100);
}
