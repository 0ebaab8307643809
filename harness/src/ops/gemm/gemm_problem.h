// GEMM's tensor convention under the ABI: A (m x k), B (k x n) in, C (m x n)
// out holding C0, scalars {alpha, beta}. Everything else in ops/gemm builds
// on these few functions, on GEMM's own typed view of a case (Problem); the
// op (gemm_op.cpp) converts at the seam.
#pragma once
#include <array>
#include <optional>

#include "case/case.h"
#include "core/tensor_geom.h"
#include "spec/requires.h"
#include "ops/op.h"
#include "spec/spec.h"

namespace assay::gemm {

enum Operand : uint32_t { A = 0, B = 1, C = 2 };

struct Layout {  // strides and base offset of one 2-D tensor, in elements
  int64_t row_stride = 0, col_stride = 1, offset = 0;
  bool operator==(const Layout&) const = default;
};

// One GEMM case in GEMM's terms (benchdnn's prb_t): the generic Case with
// sizes {m, n, k}, tensors {A, B, C} and scalars {alpha, beta}.
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  DType a_type = DType::f32, b_type = DType::f32, c_type = DType::f32;
  Layout a, b, c;
  double alpha = 1.0, beta = 0.0;
  Recipe recipe = Recipe::uniform;
  uint64_t seed = 0;
  std::array<Keep, 3> keep{};  // per tensor (A, B, C0): which elements stay nonzero
  std::string origin;

  bool operator==(const Problem&) const = default;
};

// Both ways across the seam. problem() throws InputError for a case that is
// not a GEMM case (validate() says what is wrong).
Case to_case(const Problem& p);
Problem problem(const Case& c);
void validate_case(const Case& c);
// The spec's dtypes for A, B and C (keys a, b, c).
std::array<DType, 3> spec_dtypes(const Spec& spec);

std::array<TensorGeom, 3> tensors(const Problem& c);
// Whether C holds values the kernel must read (beta != 0) or poison.
inline bool reads_c0(const Problem& c) { return c.beta != 0.0; }
// Multiply-adds of one call: m*n*k.
inline double work(const Problem& c) { return double(c.m) * double(c.n) * double(c.k); }
// How long one call may take before it counts as a hang: generous for a naive
// kernel (host: ~50 MFLOP/s, GPU: ~10 GFLOP/s) plus 5 s.
double default_timeout(const Problem& c, BackendKind backend);
// Value parameters of one operand, sized so results stay representable.
RecipeParams recipe_params(const Problem& c, Operand which);

// The sparse-change call's edit (docs/cases.md): which tensor changes and
// where. Drawn per case from its seed: one element, one row, or up to eight
// scattered elements, of A, B or C0 (those the result reads), never at positions
// fixed in advance, so that a kernel which fingerprints any fixed subset of
// its inputs cannot tell the call from the one before. tensor < 0: nothing
// the math reads can change (alpha == beta == 0, or empty tensors).
SparseChange sparse_change(const Problem& c);
// Call 2 as call 1 relabelled (Op::relabeling): A's rows and C's moved round
// by one amount, B's columns and C's by another, each in [1, extent) (0 for
// an extent of 1); none when m and n are both at most 1.
Relabeling relabeling(const Problem& c);
// The rows of C that `change` touches (a change of A's rows) and its
// columns (a change of B's columns), sorted; a whole row of B (one k index:
// every element of C) is b_row instead (-1: none). A change of C0, or none
// (tensor < 0), touches no product of A and B: both empty, b_row -1.
void changed_parts(const SparseChange& change, std::vector<int64_t>& rows, std::vector<int64_t>& cols,
                   int64_t& b_row);

// Lets `requires` expressions see m, n, k, alpha, beta and tensors A, B, C.
class Context final : public EvalContext {
 public:
  explicit Context(const Problem& c) : c_(c), t_(tensors(c)) {}
  std::optional<double> variable(std::string_view name) const override;
  std::optional<TensorGeom> tensor(std::string_view name) const override;

 private:
  Problem c_;
  std::array<TensorGeom, 3> t_;
};

}  // namespace assay::gemm
