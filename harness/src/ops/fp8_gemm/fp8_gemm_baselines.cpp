// The published checkers' rules for fp8_gemm (docs/baselines.md,
// "fp8_gemm"), each applied the way its harness is written. Every rule's
// inputs are randn quantized as DeepGEMM's tests and the frameworks do it:
// a per 1 x 128 block and b per 128 x 128 block scaled by amax / (the
// format's largest value), the scales f32; the answer is FP64 on the
// dequantized inputs rounded to d's dtype.
//  - kernelbench: 5 trials of one shape (m 128, n 256, k 512),
//    torch.allclose(ref, d, atol=rtol=1e-2 for bf16; 1e-4 for f32);
//  - tutorial: square sizes 128..4096 (the host's case limit stops at 256),
//    |d - ref| <= 1e-2, NaN-blind;
//  - assert_close: torch.testing.assert_close's defaults for d's dtype at the
//    five shapes (m x n) of the other families, k 256, each contiguous, with
//    a_scale MN-major, and with a and b sliced from wider rows;
//  - deepgemm: DeepGEMM's test (tests/test_core.py): calc_diff(d, ref) <
//    1e-3 over the whole tensor, at its shapes (m 64 and 128 against its
//    (n, k) pairs), after two scaled-down ones the host's case limit admits.
#include "ops/fp8_gemm/fp8_gemm_baselines.h"

#include <cmath>

#include <fmt/format.h>

#include "baseline/common.h"
#include "baseline/xy_rules.h"
#include "case/rng.h"
#include "ops/fp8_gemm/fp8_gemm_reference.h"

namespace assay::fp8_gemm {

using baseline::BaselineOptions;
using baseline::BaselineResult;

namespace {

std::optional<Case> plain(const Op& op, const Spec& spec, const Backend& backend, Sizes z, int variant = 0) {
  Parts p = plain_parts(spec, z, "baseline");
  if (variant == 1) p.a_scale = rows::transposed();
  if (variant == 2) p.a = rows::padded(64), p.b = rows::padded(64);
  auto fitted = baseline::fit_shapes(op, make_case(p), spec, {});
  if (!fitted || !baseline::within_limits(backend, op, *fitted)) return std::nullopt;
  return fitted;
}

// randn(rows, cols) quantized per block of br x 128 (br: 1 for a, 128 for
// b): values x / s in the FP8 type, s = max(amax, 1e-4) / its largest value.
void quantize(const std::vector<double>& x, int64_t rows, int64_t cols, int64_t br, DType t, std::vector<double>& q,
              std::vector<double>& scale) {
  const int64_t rb = (rows + br - 1) / br, kb = blocks(cols);
  scale.assign(size_t(rb * kb), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      double& s = scale[size_t((r / br) * kb + c / kScaleBlock)];
      s = std::max(s, std::fabs(x[size_t(r * cols + c)]));
    }
  for (double& s : scale) s = double(float(std::max(s, 1e-4) / max_finite(t)));  // stored in f32
  q.resize(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      q[size_t(r * cols + c)] = x[size_t(r * cols + c)] / scale[size_t((r / br) * kb + c / kScaleBlock)];
}

baseline::CaseChecks checks(Backend& backend) {
  baseline::CaseChecks k;
  k.inputs = {A, AS, B, BS};
  k.outputs = {D};
  k.draw = [](const Case& c) {
    const Sizes z = sizes_of(c);
    std::vector<std::vector<double>> v(4);
    quantize(baseline::draw_normal(c.seed, 0, z.m * z.k), z.m, z.k, 1, c.tensors[A].dtype, v[0], v[1]);
    quantize(baseline::draw_normal(c.seed, 1, z.n * z.k), z.n, z.k, kScaleBlock, c.tensors[B].dtype, v[2], v[3]);
    return v;
  };
  k.reference = [&backend](const Case& c, std::span<const baseline::Tensor> t) {
    std::vector<const std::byte*> device(c.tensors.size(), nullptr);
    for (size_t i = 0; i < t.size(); ++i) device[i] = t[i].buf.data;
    std::vector<std::vector<double>> all = reference_arrays(backend, c, device);
    for (double& x : all[D]) x = round_to(c.tensors[D].dtype, x);  // the framework's answer, in d's dtype
    return std::vector<std::vector<double>>{std::move(all[D])};
  };
  k.detail = [](const Case& c, int, int64_t i, double got, double want, const std::string& rule) {
    const Sizes z = sizes_of(c);
    return fmt::format("m={} n={} k={}: d[{},{}] = {:.9g}, expected {:.9g} ({})", z.m, z.n, z.k, i / z.n, i % z.n,
                       got, want, rule);
  };
  return k;
}

BaselineResult run(const char* name, const Op& op, Backend& backend, Runner& runner, const BaselineOptions& opt,
                   const baseline::CaseChecks& k, const std::vector<baseline::XYCase>& cases) {
  BaselineResult res;
  res.checker = name;
  baseline::Stopwatch clock;
  baseline::run_cases(k, op, backend, runner, opt.timeout_s, cases, res);
  res.seconds = clock.seconds();
  return res;
}

}  // namespace

double deepgemm_difference(const std::vector<double>& x, const std::vector<double>& y) {
  double xy = 0, sq = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) xy += x[i] * y[i], sq += x[i] * x[i] + y[i] * y[i];
  if (sq == 0 && std::isfinite(xy)) return 0.0;
  return 1.0 - 2.0 * xy / sq;
}

BaselineResult run_baseline(const Op& op, std::string_view rule, Backend& backend, Runner& runner, const Spec& spec,
                            const BaselineOptions& opt) {
  if (rule == "kernelbench") {
    baseline::CaseChecks k = checks(backend);
    const std::optional<Case> base = plain(op, spec, backend, Sizes{128, 256, 512});
    if (!base) {
      BaselineResult res;
      res.checker = "kernelbench", res.applicable = false, res.cases_skipped = baseline::kKernelBenchTrials;
      res.detail = "its one shape is outside the spec's requires or the backend's limits";
      return res;
    }
    k.reference_first = true;
    k.test = [](const Case& c, int) { return baseline::allclose_test(baseline::rule_tolerance(c.tensors[D].dtype)); };
    return run("kernelbench", op, backend, runner, opt, k, baseline::kernelbench_trials(*base, opt.seed, 0x6638));
  }
  if (rule == "tutorial") {
    baseline::CaseChecks k = checks(backend);
    k.test = [](const Case&, int) { return baseline::nan_blind_absolute_test(1e-2); };
    return run("tutorial", op, backend, runner, opt, k,
               baseline::tutorial_cases(opt.seed, [&](int64_t size) -> std::optional<Case> {
                 return plain(op, spec, backend, Sizes{size, size, size});
               }));
  }
  if (rule == "assert_close") {
    baseline::CaseChecks k = checks(backend);
    k.test = [](const Case& c, int) { return baseline::assert_close_test(c.tensors[D].dtype); };
    return run("assert_close", op, backend, runner, opt, k,
               baseline::assert_close_cases(opt.seed, [&](int64_t m, int64_t n, int variant) {
                 return plain(op, spec, backend, Sizes{m, n, 256}, variant);
               }));
  }
  if (rule == "deepgemm") {
    baseline::CaseChecks k = checks(backend);
    k.whole = [](const Case& c, int, const std::vector<double>& got, const std::vector<double>& want) -> std::string {
      const double diff = deepgemm_difference(got, want);
      if (diff < kDeepGemmThreshold) return "";
      const Sizes z = sizes_of(c);
      return fmt::format("m={} n={} k={}: calc_diff(d, ref) = {:.4g}, not below {:g}", z.m, z.n, z.k, diff,
                         kDeepGemmThreshold);
    };
    std::vector<baseline::XYCase> cases;
    auto add = [&](int64_t m, int64_t n, int64_t kk) {
      std::optional<Case> c = plain(op, spec, backend, Sizes{m, n, kk});
      if (c) c->seed = hash3(opt.seed, 0x6467, uint64_t(m * 131 + n * 7 + kk));
      cases.push_back({fmt::format("m={} n={} k={}", m, n, kk), std::move(c)});
    };
    add(64, 256, 512), add(128, 512, 512);  // scaled down (the host's case limit)
    for (int64_t m : {64, 128})
      for (auto [n, kk] : {std::pair<int64_t, int64_t>{2112, 7168}, {24576, 1536}, {32768, 512}, {7168, 16384},
                           {4096, 7168}, {7168, 2048}})
        add(m, n, kk);
    return run("deepgemm", op, backend, runner, opt, k, cases);
  }
  BaselineResult r;
  r.checker = std::string(rule), r.applicable = false, r.detail = "no such rule for fp8_gemm";
  return r;
}

}  // namespace assay::fp8_gemm
