// The published checkers' rules as written for unary activations
// (docs/baselines.md, "unary activations"):
//  - kernelbench: KernelBench level 1 19_ReLU, 21_Sigmoid, 22_Tanh,
//    25_Swish (silu), 26_GELU_ (erf gelu), 88_MinGPTNewGelu (gelu_tanh); exp
//    has no problem of its own and gets the same harness. The revision the
//    softmax and GEMM rules use: x = torch.randn(batch_size, dim),
//    batch_size = 16 * 2 * 2, dim = 16384 * 2 * 2 (scaled down on the host);
//    5 trials, reference first and its output freed before the candidate's
//    is allocated; torch.allclose atol = rtol = 1e-4 (1e-2 for 16-bit).
//  - tutorial: square power-of-two sizes 128..4096, contiguous, randn, one
//    absolute tolerance (1e-4; 1e-2 for 16-bit outputs), NaN-blind.
//  - assert_close: PyTorch's default rtol/atol per dtype on randn inputs at
//    five shapes, each also with x transposed and sliced from a wider tensor.
#include "ops/unary/unary_baselines.h"

#include <cmath>

#include <fmt/format.h>

#include "baseline/common.h"
#include "baseline/xy_rules.h"
#include "case/rng.h"
#include "ops/unary/unary_reference.h"
#include "ops/unary/unary_tolerance.h"

namespace assay::unary {

using baseline::BaselineOptions;
using baseline::BaselineResult;
using baseline::Stopwatch;
using Buf = baseline::Tensor;

namespace {

// FP64 reference rounded to y's dtype: the framework's same-dtype result.
std::vector<double> reference(Backend& backend, const Case& c, const Settings& s, const Buf& x) {
  const Shape sh = rows::shape_of(c);
  const ErrorModel e = error_model(s, Compute::f64, c.tensors[X].dtype);
  std::vector<double> out(size_t(sh.total_rows()) * size_t(sh.n));
  reference_blocks(backend, sh, x.geom, x.buf.data, e, [&](const rows::RowBlock& b, const double* ref, const double*) {
    if (!ref) return;
    for (int64_t i = 0; i < b.rows * sh.n; ++i) out[size_t(b.row0 * sh.n + i)] = round_to(c.tensors[Y].dtype, ref[i]);
  });
  return out;
}

std::optional<Case> fit_case(const Op& op, const Spec& spec, const Case& c, const Backend& backend) {
  auto fitted = baseline::fit_shapes(op, c, spec, {});
  if (!fitted || !baseline::within_limits(backend, op, *fitted)) return std::nullopt;
  return fitted;
}

Case plain(const Spec& spec, int64_t rows, int64_t n) {
  return make_case(plain_parts(spec, Shape{false, 1, rows, n}, "baseline"));
}

std::string element_detail(const Case& c, int64_t i, double got, double want, const std::string& rule) {
  const Shape s = rows::shape_of(c);
  return fmt::format("rows={} n={}: y[{},{}] = {:.9g}, expected {:.9g} ({})", s.rows, s.n, i / s.n, i % s.n, got,
                     want, rule);
}

std::string_view problem_of(Fn f) {
  switch (f) {
    case Fn::relu: return "19_ReLU";
    case Fn::sigmoid: return "21_Sigmoid";
    case Fn::tanh: return "22_Tanh";
    case Fn::silu: return "25_Swish";
    case Fn::gelu: return "26_GELU_";
    case Fn::gelu_tanh: return "88_MinGPTNewGelu";
    default: return "19_ReLU's harness";
  }
}

baseline::XYChecks checks(Backend& backend, const Settings& s) {
  return {.x = X, .y = Y, .reference = [&backend, s](const Case& c, const Buf& x) { return reference(backend, c, s, x); },
          .detail = element_detail, .test = {}, .reference_first = false};
}

BaselineResult kernelbench(const Op& op, const Settings& s, Backend& backend, Runner& runner, const Spec& spec,
                           const BaselineOptions& opt) {
  BaselineResult res;
  res.checker = "kernelbench";
  Stopwatch clock;
  const int64_t rows = 16 * 2 * 2;
  int64_t n = 16384 * 2 * 2;
  while (n > 64 && !baseline::within_limits(backend, op, plain(spec, rows, n))) n /= 2;
  auto fitted = fit_case(op, spec, plain(spec, rows, n), backend);
  if (!fitted) {
    res.applicable = false, res.cases_skipped = baseline::kKernelBenchTrials;
    res.detail = fmt::format("its one shape ({} x {}, {}) is outside the spec's requires", rows, n, problem_of(s.fn));
    return res;
  }
  const double tol = baseline::rule_tolerance(fitted->tensors[Y].dtype);
  baseline::XYChecks k = checks(backend, s);
  k.reference_first = true;  // a kernel that writes nothing finds the answer in the pool
  k.test = [tol](const Case&) { return baseline::allclose_test(tol); };
  baseline::run_xy_cases(k, op, backend, runner, opt.timeout_s, baseline::kernelbench_trials(*fitted, opt.seed, 0x756b),
                         res);
  res.seconds = clock.seconds();
  return res;
}

BaselineResult tutorial(const Op& op, const Settings& s, Backend& backend, Runner& runner, const Spec& spec,
                        const BaselineOptions& opt) {
  BaselineResult res;
  res.checker = "tutorial";
  Stopwatch clock;
  baseline::XYChecks k = checks(backend, s);
  k.test = [](const Case& c) { return baseline::nan_blind_absolute_test(baseline::rule_tolerance(c.tensors[Y].dtype)); };
  const auto cases = baseline::tutorial_cases(
      opt.seed, [&](int64_t size) { return fit_case(op, spec, plain(spec, size, size), backend); });
  baseline::run_xy_cases(k, op, backend, runner, opt.timeout_s, cases, res);
  res.seconds = clock.seconds();
  return res;
}

BaselineResult assert_close(const Op& op, const Settings& s, Backend& backend, Runner& runner, const Spec& spec,
                            const BaselineOptions& opt) {
  BaselineResult res;
  res.checker = "assert_close";
  Stopwatch clock;
  baseline::XYChecks k = checks(backend, s);
  k.test = [](const Case& c) { return baseline::assert_close_test(c.tensors[Y].dtype); };
  const auto cases = baseline::assert_close_cases(opt.seed, [&](int64_t rows, int64_t n, int variant) {
    Parts p = plain_parts(spec, Shape{false, 1, rows, n}, "baseline");
    if (variant == 1) p.x.col_major = true;
    if (variant == 2) p.x.pad = 3;
    return fit_case(op, spec, make_case(p), backend);
  });
  baseline::run_xy_cases(k, op, backend, runner, opt.timeout_s, cases, res);
  res.seconds = clock.seconds();
  return res;
}

}  // namespace

BaselineResult run_baseline(const Op& op, const Settings& s, std::string_view rule, Backend& backend, Runner& runner,
                            const Spec& spec, const BaselineOptions& opt) {
  if (rule == "kernelbench") return kernelbench(op, s, backend, runner, spec, opt);
  if (rule == "tutorial") return tutorial(op, s, backend, runner, spec, opt);
  if (rule == "assert_close") return assert_close(op, s, backend, runner, spec, opt);
  BaselineResult r;
  r.checker = std::string(rule), r.applicable = false, r.detail = "no such rule for unary";
  return r;
}

}  // namespace assay::unary
