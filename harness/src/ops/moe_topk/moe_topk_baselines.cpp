// The published checkers' rules for routing (docs/baselines.md, "moe_topk").
// KernelBench has no routing problem; its harness is applied as it is to
// any op: one model-sized shape from randn, 5 trials, the reference first,
// torch.allclose(ref, got, atol=rtol=1e-4) on both outputs. Routing tests
// as TileKernels and model repositories write them compare the indices
// exactly and the weights with a tolerance at a few shapes:
//  - kernelbench: tokens 1024 and the model's experts (Mixtral's 8 with
//    topk 2 for softmax_topk, DeepSeek-V3's 256 with topk 8 otherwise);
//  - tutorial: tokens 128..4096 (powers of two), indices equal, weights
//    within |got - ref| <= 1e-3 max(1, |ref|), NaN-blind;
//  - assert_close: torch.testing.assert_close on weights (f32: rtol 1.3e-6,
//    atol 1e-5) and indices (exact), tokens 1, 7, 64, 127, 256, each with
//    logits contiguous, transposed in memory and sliced from a wider tensor.
// Logits and bias are drawn from randn: no ties, no masked experts.
#include "ops/moe_topk/moe_topk_baselines.h"

#include <cmath>

#include <fmt/format.h>

#include "baseline/common.h"
#include "baseline/xy_rules.h"
#include "ops/moe_topk/moe_topk_judge.h"

namespace assay::moe_topk {

using baseline::BaselineOptions;
using baseline::BaselineResult;
using baseline::ElementTest;
using baseline::Stopwatch;

namespace {

Sizes model_sizes(const Settings& s, int64_t tokens) {
  Sizes z = s.mode == Mode::softmax_topk ? Sizes{tokens, 8, 2} : Sizes{tokens, 256, 8};
  if (s.grouped() && z.experts % s.n_group) z.experts = (z.experts / s.n_group + 1) * s.n_group;
  if (s.grouped()) z.topk = std::min<int64_t>(z.topk, int64_t(s.topk_group) * (z.experts / s.n_group));
  return z;
}

std::optional<Case> fit_case(const Op& op, const Spec& spec, const Case& c, const Backend& backend) {
  auto fitted = baseline::fit_shapes(op, c, spec, {});
  if (!fitted || !baseline::within_limits(backend, op, *fitted)) return std::nullopt;
  return fitted;
}

std::optional<Case> plain(const Op& op, const Spec& spec, const Settings& s, const Backend& backend, int64_t tokens,
                          int variant = 0) {
  Parts p = plain_parts(spec, s, model_sizes(s, tokens), "baseline");
  if (variant == 1) p.logits.col_major = true;
  if (variant == 2) p.logits.pad = 3;
  return fit_case(op, spec, make_case(p), backend);
}

baseline::CaseChecks checks(Backend& backend, const Settings& s) {
  baseline::CaseChecks k;
  k.reference = [&backend, s](const Case& c, std::span<const baseline::Tensor> t) {
    const Positions at = positions(c);
    std::vector<const std::byte*> device(c.tensors.size(), nullptr);
    for (size_t i = 0; i < t.size(); ++i) device[i] = t[i].buf.data;
    std::vector<std::vector<double>> all = reference(backend, s, c, device);
    for (double& w : all[size_t(at.weights)]) w = round_to(DType::f32, w);  // the framework's f32 answer
    return std::vector<std::vector<double>>{all[size_t(at.weights)], all[size_t(at.indices)]};
  };
  k.detail = [](const Case& c, int tensor, int64_t i, double got, double want, const std::string& rule) {
    const Sizes z = sizes_of(c);
    return fmt::format("tokens={} experts={} topk={}: {}[{},{}] = {:.9g}, expected {:.9g} ({})", z.tokens, z.experts,
                       z.topk, c.tensors[size_t(tensor)].name, i / z.topk, i % z.topk, got, want, rule);
  };
  return k;
}

void prepare(baseline::CaseChecks& k, const Case& c) {
  const Positions at = positions(c);
  k.inputs = {at.logits};
  if (at.bias >= 0) k.inputs.push_back(at.bias);
  k.outputs = {at.weights, at.indices};
}

BaselineResult run(const char* name, const Op& op, Backend& backend, Runner& runner, const BaselineOptions& opt,
                   baseline::CaseChecks k, const std::vector<baseline::XYCase>& cases) {
  BaselineResult res;
  res.checker = name;
  Stopwatch clock;
  for (const auto& x : cases)
    if (x.c) {
      prepare(k, *x.c);
      break;
    }
  baseline::run_cases(k, op, backend, runner, opt.timeout_s, cases, res);
  res.seconds = clock.seconds();
  return res;
}

}  // namespace

BaselineResult run_baseline(const Op& op, const Settings& s, std::string_view rule, Backend& backend, Runner& runner,
                            const Spec& spec, const BaselineOptions& opt) {
  baseline::CaseChecks k = checks(backend, s);
  if (rule == "kernelbench") {
    const std::optional<Case> base = plain(op, spec, s, backend, 1024);
    if (!base) {
      BaselineResult res;
      res.checker = "kernelbench", res.applicable = false, res.cases_skipped = baseline::kKernelBenchTrials;
      res.detail = "its one shape is outside the spec's requires or the backend's limits";
      return res;
    }
    k.reference_first = true;
    k.test = [](const Case&, int) { return baseline::allclose_test(1e-4); };
    return run("kernelbench", op, backend, runner, opt, k, baseline::kernelbench_trials(*base, opt.seed, 0x6d6b));
  }
  if (rule == "tutorial") {
    k.test = [](const Case& c, int tensor) {
      const bool index = tensor == positions(c).indices;
      return ElementTest{[index](double got, double want) {
                           const double d = std::fabs(want - got);
                           return !(index ? d > 0 : d > 1e-3 * std::max(1.0, std::fabs(want)));  // NaN-blind
                         },
                         index ? "index differs" : "relative diff > 1e-3"};
    };
    return run("tutorial", op, backend, runner, opt, k,
               baseline::tutorial_cases(opt.seed, [&](int64_t size) { return plain(op, spec, s, backend, size); }));
  }
  if (rule == "assert_close") {
    k.test = [](const Case& c, int tensor) { return baseline::assert_close_test(c.tensors[size_t(tensor)].dtype); };
    return run("assert_close", op, backend, runner, opt, k,
               baseline::assert_close_cases(opt.seed, [&](int64_t tokens, int64_t, int variant) {
                 return plain(op, spec, s, backend, tokens, variant);
               }));
  }
  BaselineResult r;
  r.checker = std::string(rule), r.applicable = false, r.detail = "no such rule for moe_topk";
  return r;
}

}  // namespace assay::moe_topk
