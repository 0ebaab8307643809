// GEMM's tensor convention under the ABI: A (m x k), B (k x n) in, C (m x n)
// out holding C0, scalars {alpha, beta}. Everything else in ops/gemm builds
// on these few functions.
#pragma once
#include <array>
#include <optional>

#include "case/case.h"
#include "core/tensor_geom.h"
#include "spec/requires.h"
#include "spec/spec.h"

namespace assay::gemm {

enum Operand : uint32_t { A = 0, B = 1, C = 2 };

std::array<TensorGeom, 3> tensors(const Case& c);
// Whether C holds values the kernel must read (beta != 0) or poison.
inline bool reads_c0(const Case& c) { return c.beta != 0.0; }
// Multiply-adds of one call: m*n*k.
inline double work(const Case& c) { return double(c.m) * double(c.n) * double(c.k); }
// How long one call may take before it counts as a hang: generous for a naive
// kernel (host: ~50 MFLOP/s, GPU: ~10 GFLOP/s) plus 5 s.
double default_timeout(const Case& c, BackendKind backend);
// Value parameters of one operand, sized so results stay representable.
RecipeParams recipe_params(const Case& c, Operand which);

// The sparse-change call's edit (docs/cases.md): which tensor changes and
// where. Drawn per case from its seed: one element, one row, or up to eight
// scattered elements, of A, B or C0 (those the result reads), never at positions
// fixed in advance, so that a kernel which fingerprints any fixed subset of
// its inputs cannot tell the call from the one before. tensor < 0: nothing
// the math reads can change (alpha == beta == 0, or empty tensors).
struct SparseChange {
  int tensor = -1;
  Patch patch;
};
SparseChange sparse_change(const Case& c);

// Lets `requires` expressions see m, n, k, alpha, beta and tensors A, B, C.
class Context final : public EvalContext {
 public:
  explicit Context(const Case& c) : c_(c), t_(tensors(c)) {}
  std::optional<double> variable(std::string_view name) const override;
  std::optional<TensorGeom> tensor(std::string_view name) const override;

 private:
  const Case& c_;
  std::array<TensorGeom, 3> t_;
};

}  // namespace assay::gemm
