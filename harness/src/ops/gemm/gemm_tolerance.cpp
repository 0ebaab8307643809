#include "ops/gemm/gemm_tolerance.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

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
double max_abs(const Problem& c, Operand which) {
  RecipeParams p = recipe_params(c, which);
  switch (p.recipe) {
    case Recipe::ints: return p.int_range;
    case Recipe::mixed: return std::ldexp(1.0, p.exp_hi);
    default: return 1.0;
  }
}

// Smallest positive value of a storage type (its subnormal spacing).
double min_subnormal(DType t) { return std::ldexp(1.0, min_normal_exp(t) - (mantissa_bits(t) - 1)); }

// Half the spacing of the compute format's subnormals when it is coarser
// there than the storage type: the absolute part of converting an input.
double conversion_floor(DType t, Compute compute) {
  const double s = min_subnormal(format_of(compute));
  return s > min_subnormal(t) ? 0.5 * s : 0.0;
}

}  // namespace

Compute accumulator(Compute c) {
  return c == Compute::f64 ? Compute::f64 : c == Compute::f16 ? Compute::f16 : Compute::f32;
}

bool converts(DType t, Compute c) {
  const ComputeFormat f = format_of(c);
  return f.bits < mantissa_bits(t) || f.emin > min_normal_exp(t) || min_subnormal(f) > min_subnormal(t) ||
         f.max < max_finite(t);
}

bool needs_class_reference(const Problem& c, Compute compute) {
  const bool a = converts(c.a_type, compute), b = converts(c.b_type, compute);
  const bool c0 = reads_c0(c) && converts(c.c_type, accumulator(compute));
  if (!(a || b || c0)) return false;
  switch (c.recipe) {
    case Recipe::specials: return true;  // subnormals that round to 0 may meet an Inf: 0*Inf
    case Recipe::mixed: {                // no Inf drawn: only overflow at conversion matters
      auto over = [&](Operand x, Compute to) { return max_abs(c, x) >= format_of(to).max; };
      return (a && over(A, compute)) || (b && over(B, compute)) || (c0 && over(C, accumulator(compute)));
    }
    default: return false;  // ints and [-1, 1) reals fit every format
  }
}

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
double flush_allowance(const Problem& c, Compute compute) {
  const double mu_acc = min_normal(accumulator_type(compute));
  const double mu_a = std::max(min_normal(c.a_type), mu_acc), mu_b = std::max(min_normal(c.b_type), mu_acc);
  const double mu_c = std::max(min_normal(c.c_type), mu_acc);
  const double k = double(std::max<int64_t>(c.k, 0));
  const double alpha = c.alpha == 0.0 ? 0.0 : std::max(1.0, std::fabs(c.alpha));  // alpha == 0: A*B not referenced
  return alpha * k * (mu_a * max_abs(c, B) + mu_b * max_abs(c, A) + 2.0 * mu_acc) + std::fabs(c.beta) * mu_c +
         3.0 * mu_acc + min_normal(c.c_type);
}

// The per-element bound grows like k u sum|a b|, the error of a kernel that
// rounds its inputs to half or tf32 like sqrt(k) 2^-11 rms(a b): past k of a
// few hundred the first admits the second (docs/tolerance.md). Over many
// elements the RMS error tells them apart. With uniform [-1, 1) data (E x^2 =
// 1/3), a correct kernel in unit roundoff u errs in RMS by about u k / (3 sqrt 6)
// (sequential summation, the worst common order; pairwise, FMA and split-k do
// better), plus the rounding of the output. The rule allows
//   u_acc (k |alpha| / 3 + |beta| / sqrt 3) + 2 u_out (sqrt(k) |alpha| / 3 + |beta| / sqrt 3),
// 2.4 times the sequential figure; inputs rounded to 11 bits err
// sqrt(k) 0.82 2^-11 |alpha| / 3, about 6700 / sqrt(k) times the first term
// (100x at k = 4096, 7x at k = 10^6).
std::string rms_excess(const Problem& c, Compute compute, const CompareStats& s) {
  if (c.recipe != Recipe::uniform || s.finite < kMinAggregate) return {};
  if (compute != Compute::f32 && compute != Compute::f64) return {};  // narrow compute rounds its inputs, as declared
  const int acc_bits = mantissa_bits(compute);
  for (DType t : {c.a_type, c.b_type})
    if (mantissa_bits(t) > acc_bits) return {};
  const double u_acc = std::ldexp(1.0, -acc_bits), u_out = std::ldexp(1.0, -std::min(acc_bits, mantissa_bits(c.c_type)));
  const double k = double(std::max<int64_t>(c.k, 0)), alpha = std::fabs(c.alpha), beta = std::fabs(c.beta);
  const double allowed = u_acc * (k * alpha / 3.0 + beta / std::sqrt(3.0)) +
                         2.0 * u_out * (std::sqrt(k) * alpha / 3.0 + beta / std::sqrt(3.0));
  const double rms = std::sqrt(s.sq_error / double(s.finite));
  if (rms <= allowed) return {};
  return fmt::format("RMS error {:.3g} over {} elements, {:.3g}x what {} computation allows ({:.3g}, docs/tolerance.md): "
                     "every element is within its worst-case bound, but together they show a narrower precision than "
                     "the declared one",
                     rms, s.finite, rms / allowed, name(compute), allowed);
}

Tolerance tolerance(const Problem& c, Compute compute, double scale, uint64_t poison_bits, Subnormals subnormals) {
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
  // Below the normal range the model above is not relative. Converting an
  // input into a compute type whose subnormals are coarser (tf32 2^-136, f16
  // 2^-24 against f32's 2^-149) moves it by up to half their spacing, eta:
  // a product a*b then errs by up to eta_A |b| + eta_B |a| + eta_A eta_B on top
  // of the relative terms (with M_A, M_B bounding |a|, |b|; doubled for the
  // relative rounding of these terms and of their sum). And in IEEE
  // arithmetic each product that lands below the accumulator's normal range
  // loses up to half its subnormal spacing (scaled by alpha, applied after
  // the sum), as do alpha*acc and beta*C0; sums of subnormals are exact.
  // compare() caps the floor at 3 * bound per element, so an element whose
  // products are far from underflow gets nothing from it.
  const double scale_ab = c.alpha == 0.0 ? 0.0 : std::max(1.0, std::fabs(c.alpha));
  const double k = double(std::max<int64_t>(c.k, 0));
  const double eta_a = conversion_floor(c.a_type, compute), eta_b = conversion_floor(c.b_type, compute);
  t.abs_floor = scale_ab * k * 2.0 * (eta_a * max_abs(c, B) + eta_b * max_abs(c, A) + eta_a * eta_b) +
                (scale_ab * k + 2.0) * 0.5 * min_subnormal(format_of(accumulator(compute)));
  if (reads_c0(c)) t.abs_floor += std::fabs(c.beta) * 2.0 * conversion_floor(c.c_type, accumulator(compute));
  // The accumulator overflows only where a partial sum can pass its largest
  // value; the bound (|alpha| sum|a||b| + |beta||C0|) caps every exact
  // partial sum scaled by min(1, |alpha|) (alpha is applied after the sum),
  // and the computed ones stray from the exact ones by the relative model's
  // T u_eff (converted inputs may be slightly larger than the originals).
  const double acc_max = format_of(accumulator(compute)).max;
  t.nonfinite_above = acc_max * (c.alpha == 0.0 ? 1.0 : std::min(1.0, std::fabs(c.alpha))) / (1.0 + scale * t.u_eff);
  if (subnormals == Subnormals::flush) {
    t.abs_extra = flush_allowance(c, compute);
    t.inf_may_be_nan = true;  // a flushed factor times an infinite one: 0 * Inf
  }
  return t;
}

}  // namespace assay::gemm
