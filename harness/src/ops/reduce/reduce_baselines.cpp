// The published checkers' rules as written for reductions (docs/baselines.md, "reduce"):
//  - kernelbench: KernelBench level 1 "47_Sum_reduction_over_a_dimension.py"
//    (48_Mean, 49_Max, 51_Argmax, 52_Argmin, 53_Min: the same harness):
//    x = torch.randn(batch_size, dim1, dim2), batch_size = 16, dim1 = dim2 =
//    256, reduced over one dimension (here the last: b = 16, rows = n = 256),
//    5 trials, the reference first, then the candidate,
//    torch.allclose(ref, got, atol=rtol=tol), tol 1e-4 (fp32) or 1e-2
//    (fp16/bf16), as for softmax; an index output compares the same way.
//  - tutorial: the CUDA-tutorial reduction check: square power-of-two sizes
//    128..4096, randn inputs, each row against a CPU loop with one relative
//    tolerance |got - ref| <= 1e-3 max(1, |ref|) (indices: equal),
//    NaN-blind (a comparison with NaN is false).
//  - assert_close: torch.testing.assert_close(kernel(x), torch.sum(x, -1))
//    (mean, amax, amin, argmax, argmin) with PyTorch's default rtol/atol per
//    y dtype (int64: exact), on randn inputs at a few shapes, each also with
//    x transposed in memory and sliced from a wider tensor.
#include "ops/reduce/reduce_baselines.h"

#include <cmath>

#include <fmt/format.h>

#include "baseline/common.h"
#include "baseline/xy_rules.h"
#include "case/rng.h"
#include "ops/reduce/reduce_reference.h"
#include "ops/reduce/reduce_tolerance.h"

namespace assay::reduce {

using baseline::BaselineOptions;
using baseline::BaselineResult;
using baseline::ElementTest;
using baseline::Stopwatch;
using Buf = baseline::Tensor;

namespace {

// FP64 reference rounded to y's dtype: the framework's same-dtype result.
std::vector<double> reference(Backend& backend, const Case& c, const Settings& s, const Buf& x) {
  const rows::Shape sh = rows::shape_of(c);
  const ErrorModel e = error_model(s, Compute::f64, c.tensors[X].dtype, Subnormals::ieee);
  std::vector<double> out(size_t(sh.total_rows()));
  reference_rows(backend, sh, x.geom, x.buf.data, c.geom(Y), nullptr, e,
                 [&](const rows::RowBlock& b, const double* ref, const double*) {
                   for (int64_t i = 0; i < b.rows; ++i) out[size_t(b.row0 + i)] = round_to(c.tensors[Y].dtype, ref[i]);
                 });
  return out;
}

std::optional<Case> fit_case(const Op& op, const Spec& spec, const Case& c, const Backend& backend) {
  auto fitted = baseline::fit_shapes(op, c, spec, {});
  if (!fitted || !baseline::within_limits(backend, op, *fitted)) return std::nullopt;
  return fitted;
}

std::string detail(const Case& c, int64_t i, double got, double want, const std::string& rule) {
  const rows::Shape s = rows::shape_of(c);
  return fmt::format("rows={} n={}: y[{}] = {:.9g}, expected {:.9g} ({})", s.total_rows(), s.n, i, got, want, rule);
}

baseline::XYChecks checks(Backend& backend, const Settings& s) {
  return {.x = X, .y = Y, .reference = [&backend, s](const Case& c, const Buf& x) { return reference(backend, c, s, x); },
          .detail = detail, .test = {}, .reference_first = false};
}

Case plain(const Spec& spec, const Settings& s, int64_t rows, int64_t n, int variant = 0) {
  Parts p = plain_parts(spec, s, rows::Shape{false, 1, rows, n}, "baseline");
  if (variant == 1) p.x.col_major = true;
  if (variant == 2) p.x.pad = 3;
  return make_case(p);
}

BaselineResult kernelbench(const Op& op, const Settings& s, Backend& backend, Runner& runner, const Spec& spec,
                           const BaselineOptions& opt) {
  BaselineResult res;
  res.checker = "kernelbench";
  Stopwatch clock;
  Parts p = plain_parts(spec, s, rows::Shape{true, 16, 256, 256}, "baseline");
  auto fitted = fit_case(op, spec, make_case(p), backend);
  if (!fitted) {
    res.applicable = false, res.cases_skipped = baseline::kKernelBenchTrials;
    res.detail = "its one shape (16 x 256 x 256) is outside the spec's requires or the backend's limits";
    return res;
  }
  const double tol = baseline::rule_tolerance(fitted->tensors[X].dtype);
  baseline::XYChecks k = checks(backend, s);
  k.reference_first = true;
  k.test = [tol](const Case&) { return baseline::allclose_test(tol); };
  baseline::run_xy_cases(k, op, backend, runner, opt.timeout_s, baseline::kernelbench_trials(*fitted, opt.seed, 0x7264),
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
  const bool index = is_arg(s.op);
  k.test = [index](const Case&) {
    return ElementTest{[index](double got, double want) {
                         const double d = std::fabs(want - got);
                         return !(index ? d > 0 : d > 1e-3 * std::max(1.0, std::fabs(want)));  // NaN-blind
                       },
                       index ? "index differs" : "relative diff > 1e-3"};
  };
  const auto cases = baseline::tutorial_cases(
      opt.seed, [&](int64_t size) { return fit_case(op, spec, plain(spec, s, size, size), backend); });
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
    return fit_case(op, spec, plain(spec, s, rows, n, variant), backend);
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
  r.checker = std::string(rule), r.applicable = false, r.detail = "no such rule for reduce";
  return r;
}

}  // namespace assay::reduce
