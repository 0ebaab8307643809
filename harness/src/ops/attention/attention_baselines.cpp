// The published checkers' rules for attention (docs/baselines.md,
// "attention"), each applied the way its harness is written, inputs from
// randn, scale 1/sqrt(d):
//  - kernelbench: KernelBench's harness on one model-like shape (b 2, 4
//    heads, 128 queries and keys, d 64, not causal: within the host's
//    case limit), 5 trials, the
//    reference first, torch.allclose(ref, o, atol=rtol=1e-4; 1e-2 for 16-bit
//    types) on o;
//  - tutorial: the flash-attention tutorials' check, square sequences of
//    128..4096 (the host's case limit stops at 256), 4 heads, d 64, not causal,
//    |o - ref| <= 1e-2, NaN-blind;
//  - assert_close: torch.testing.assert_close on o and lse at the five
//    shapes (sq x sk) of the other families, 4 heads, d 64, causal where
//    square, each with q, k, v contiguous, in [b, s, h, d] memory, and
//    sliced from wider rows.
#include "ops/attention/attention_baselines.h"

#include <cmath>

#include <fmt/format.h>

#include "baseline/common.h"
#include "baseline/xy_rules.h"
#include "ops/attention/attention_reference.h"
#include "ops/attention/attention_tolerance.h"

namespace assay::attention {

using baseline::BaselineOptions;
using baseline::BaselineResult;
using baseline::ElementTest;
using baseline::Stopwatch;

namespace {

std::optional<Case> plain(const Op& op, const Spec& spec, const Settings& s, const Backend& backend, Sizes z,
                          bool causal, int variant = 0) {
  Parts p = plain_parts(spec, s, z, "baseline");
  p.causal = causal;
  if (variant == 1) p.q = p.k = p.v = Layout{true, 0, 0, 0};
  if (variant == 2) p.q = p.k = p.v = Layout{false, 3, 0, 0};
  auto fitted = baseline::fit_shapes(op, make_case(p), spec, {});
  if (!fitted || !baseline::within_limits(backend, op, *fitted)) return std::nullopt;
  return fitted;
}

// with_lse: the answer for lse too (the spec's kernel writes it).
baseline::CaseChecks checks(Backend& backend, const Settings& s, bool with_lse) {
  baseline::CaseChecks k;
  k.reference = [&backend, s, with_lse](const Case& c, std::span<const baseline::Tensor> t) {
    std::vector<const std::byte*> device(c.tensors.size(), nullptr);
    for (size_t i = 0; i < t.size(); ++i) device[i] = t[i].buf.data;
    std::vector<std::vector<double>> all = reference_arrays(backend, c, device, model_of(s, Compute::f64));
    for (double& x : all[O]) x = round_to(c.tensors[O].dtype, x);  // the framework's answer, in o's dtype
    std::vector<std::vector<double>> out{std::move(all[O])};
    if (with_lse) out.push_back(std::move(all[LSE]));
    return out;
  };
  k.detail = [](const Case& c, int tensor, int64_t i, double got, double want, const std::string& rule) {
    const Sizes z = sizes_of(c);
    const int64_t cols = tensor == O ? z.dv : z.sq;
    return fmt::format("sq={} sk={} d={} causal={}: {}[{},{}] = {:.9g}, expected {:.9g} ({})", z.sq, z.sk, z.d,
                       c.scalars[1].value, c.tensors[size_t(tensor)].name, i / cols, i % cols, got, want, rule);
  };
  return k;
}

BaselineResult run(const char* name, const Op& op, Backend& backend, Runner& runner, const BaselineOptions& opt,
                   baseline::CaseChecks k, bool with_lse, const std::vector<baseline::XYCase>& cases) {
  BaselineResult res;
  res.checker = name;
  Stopwatch clock;
  k.inputs = {Q, K, V};
  k.outputs = with_lse ? std::vector<int>{O, LSE} : std::vector<int>{O};
  baseline::run_cases(k, op, backend, runner, opt.timeout_s, cases, res);
  res.seconds = clock.seconds();
  return res;
}

}  // namespace

BaselineResult run_baseline(const Op& op, const Settings& s, std::string_view rule, Backend& backend, Runner& runner,
                            const Spec& spec, const BaselineOptions& opt) {
  if (rule == "kernelbench") {
    baseline::CaseChecks k = checks(backend, s, false);
    const std::optional<Case> base = plain(op, spec, s, backend, Sizes{2, 4, 4, 128, 128, 64, 64}, false);
    if (!base) {
      BaselineResult res;
      res.checker = "kernelbench", res.applicable = false, res.cases_skipped = baseline::kKernelBenchTrials;
      res.detail = "its one shape is outside the spec's requires or the backend's limits";
      return res;
    }
    k.reference_first = true;
    k.test = [](const Case& c, int tensor) {
      return baseline::allclose_test(baseline::rule_tolerance(c.tensors[size_t(tensor)].dtype));
    };
    return run("kernelbench", op, backend, runner, opt, k, false,
               baseline::kernelbench_trials(*base, opt.seed, 0x6174));
  }
  if (rule == "tutorial") {
    baseline::CaseChecks k = checks(backend, s, false);
    k.test = [](const Case&, int) { return baseline::nan_blind_absolute_test(1e-2); };
    return run("tutorial", op, backend, runner, opt, k, false,
               baseline::tutorial_cases(opt.seed, [&](int64_t size) -> std::optional<Case> {
                 return plain(op, spec, s, backend, Sizes{1, 4, 4, size, size, 64, 64}, false);
               }));
  }
  if (rule == "assert_close") {
    baseline::CaseChecks k = checks(backend, s, s.writes_lse);
    k.test = [](const Case& c, int tensor) { return baseline::assert_close_test(c.tensors[size_t(tensor)].dtype); };
    return run("assert_close", op, backend, runner, opt, k, s.writes_lse,
               baseline::assert_close_cases(opt.seed, [&](int64_t sq, int64_t sk, int variant) {
                 return plain(op, spec, s, backend, Sizes{1, 4, 4, sq, sk, 64, 64}, sq == sk, variant);
               }));
  }
  BaselineResult r;
  r.checker = std::string(rule), r.applicable = false, r.detail = "no such rule for attention";
  return r;
}

}  // namespace assay::attention
