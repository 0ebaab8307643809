#include "ops/gemm/gemm_tolerance.h"

#include <algorithm>
#include <cmath>

#include "ops/gemm/gemm_problem.h"

namespace assay::gemm {
namespace {

// Smallest normal number of the type, 2^min_normal_exp.
double min_normal(DType t) { return std::ldexp(1.0, min_normal_exp(t)); }

// The type whose exponent range the accumulator has (tf32 and bf16 share f32's).
DType accumulator_type(Compute c) {
  return c == Compute::f64 ? DType::f64 : c == Compute::f16 ? DType::f16 : DType::f32;
}

// Largest finite |value| an operand's recipe draws (case/values.h): ints up to
// int_range, uniform and the finite specials in [-1, 1), mixed below 2^exp_hi
// (rounding to the storage type may reach 2^exp_hi itself).
double max_abs(const Case& c, Operand which) {
  RecipeParams p = recipe_params(c, which);
  switch (p.recipe) {
    case Recipe::ints: return p.int_range;
    case Recipe::mixed: return std::ldexp(1.0, p.exp_hi);
    default: return 1.0;
  }
}

}  // namespace

// Flushing a subnormal x to zero changes it by |x| < the smallest normal of
// the type it is flushed in. Per element of C = alpha*A*B + beta*C0, with
// mu_acc the accumulator's smallest normal, mu'_X = max(mu(type of X), mu_acc)
// (an input is subnormal in its own type or after conversion to the compute
// type) and M_A, M_B the largest |a|, |b| the recipes draw:
//   - a flushed input a_ip turns a_ip*b_pj into 0: error |a_ip||b_pj| <
//     mu'_A * M_B (if b_pj is flushed too the product is covered the same way);
//     likewise mu'_B * M_A for b_pj; over k products k (mu'_A M_B + mu'_B M_A);
//   - each of the k products and k partial sums may itself be flushed: 2 k mu_acc;
//   these accumulation errors are scaled by alpha when it is applied after the
//   sum (max(1, |alpha|) covers both orders);
//   - epilogue: C0 flushed, |beta| mu'_C; alpha*acc, beta*C0 and their sum
//     flushed, 3 mu_acc; the output flushed in its own type, mu(C).
// Flushing only shrinks magnitudes, so the rounding errors of the flushed
// problem stay within the usual relative term (its bound is no larger).
double flush_allowance(const Case& c, Compute compute) {
  const double mu_acc = min_normal(accumulator_type(compute));
  const double mu_a = std::max(min_normal(c.a_type), mu_acc), mu_b = std::max(min_normal(c.b_type), mu_acc);
  const double mu_c = std::max(min_normal(c.c_type), mu_acc);
  const double k = double(std::max<int64_t>(c.k, 0));
  const double alpha = c.alpha == 0.0 ? 0.0 : std::max(1.0, std::fabs(c.alpha));  // alpha == 0: A*B not referenced
  return alpha * k * (mu_a * max_abs(c, B) + mu_b * max_abs(c, A) + 2.0 * mu_acc) + std::fabs(c.beta) * mu_c +
         3.0 * mu_acc + min_normal(c.c_type);
}

Tolerance tolerance(const Case& c, Compute compute, double scale, uint64_t poison_bits, Subnormals subnormals) {
  Tolerance t;
  t.out = c.c_type;
  t.scale = scale;
  // Accumulation: a dot product of length k in unit roundoff u errs by at most
  // gamma_k = k*u/(1-k*u) relative to sum |a_i b_i|; four more roundings cover
  // the product, alpha, beta*C0 and the final add.
  // tf32 rounds the inputs to 11 significant bits but accumulates in f32.
  const int acc_bits = compute == Compute::tf32 ? 24 : mantissa_bits(compute);
  const int round_bits = mantissa_bits(compute);
  const double u_acc = std::ldexp(1.0, -acc_bits);
  double u = double(std::max<int64_t>(c.k, 0) + 4) * u_acc;
  // Inputs rounded to a narrower compute type (tf32, or f32 data computed in
  // f16/bf16): each factor of a product carries one rounding.
  const int in_bits = std::max(mantissa_bits(c.a_type), mantissa_bits(c.b_type));
  if (round_bits < in_bits) u += 2.0 * std::ldexp(1.0, -round_bits);
  t.u_eff = u;
  // An epilogue in the output's precision: cuBLAS 13.1 on the H200 rounds
  // alpha*A*B to an f16/bf16 output before adding beta*C0 (measured; see
  // docs/tolerance.md). One rounding of each term, relative to its size.
  const int out_bits = mantissa_bits(c.c_type);
  if (out_bits < acc_bits) t.u_epilogue = std::ldexp(1.0, -out_bits);
  // Exact results: integer inputs and scalars; the sum is exact while every
  // partial sum fits the narrower of the output and the accumulator.
  auto integral = [](double x) { return x == std::trunc(x) && std::fabs(x) <= 2; };
  t.exact = c.recipe == Recipe::ints && integral(c.alpha) && integral(c.beta);
  t.exact_bits = std::min(mantissa_bits(c.c_type), acc_bits);
  t.poisoned = c.beta == 0.0;
  t.poison = poison_bits;
  if (subnormals == Subnormals::flush) {
    t.abs_extra = flush_allowance(c, compute);
    t.inf_may_be_nan = true;  // a flushed factor times an infinite one: 0 * Inf
  }
  return t;
}

}  // namespace assay::gemm
