#include "ops/gemm/gemm_tolerance.h"

#include <algorithm>
#include <cmath>

namespace assay::gemm {

Tolerance tolerance(const Case& c, Compute compute, double scale, uint64_t poison_bits) {
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
  return t;
}

}  // namespace assay::gemm
