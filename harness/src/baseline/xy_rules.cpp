#include "baseline/xy_rules.h"

#include <cmath>

#include <fmt/format.h>

#include "case/rng.h"
#include "ops/op.h"

namespace assay::baseline {

ElementTest allclose_test(double tol) {
  return {[tol](double got, double want) { return torch_close(want, got, tol, tol); },  // allclose(ref, got)
          fmt::format("allclose {:g}", tol)};
}

ElementTest assert_close_test(DType y) {
  const std::pair<double, double> tol = torch_tolerances(y);
  return {[tol](double got, double want) { return torch_close(got, want, tol.first, tol.second); },
          fmt::format("assert_close rtol {:g} atol {:g}", tol.first, tol.second)};
}

ElementTest nan_blind_absolute_test(double tol) {
  return {[tol](double got, double want) { return !(std::fabs(want - got) > tol); }, fmt::format("|diff| > {:g}", tol)};
}

double rule_tolerance(DType t) { return t == DType::f16 || t == DType::bf16 ? 1e-2 : 1e-4; }

std::vector<XYCase> kernelbench_trials(const Case& base, uint64_t seed, uint64_t salt) {
  std::vector<XYCase> out;
  for (int trial = 0; trial < kKernelBenchTrials; ++trial) {
    Case c = base;
    c.seed = hash3(seed, salt, uint64_t(trial));
    out.push_back({fmt::format("trial {}", trial + 1), std::move(c)});
  }
  return out;
}

std::vector<XYCase> tutorial_cases(uint64_t seed, const std::function<std::optional<Case>(int64_t size)>& make) {
  std::vector<XYCase> out;
  for (int64_t size = 128; size <= 4096; size *= 2) {
    std::optional<Case> c = make(size);
    if (c) c->seed = hash3(seed, 0x7475, uint64_t(size));
    out.push_back({fmt::format("size {}", size), std::move(c)});
  }
  return out;
}

std::vector<XYCase> assert_close_cases(
    uint64_t seed, const std::function<std::optional<Case>(int64_t rows, int64_t n, int variant)>& make) {
  constexpr std::pair<int64_t, int64_t> kShapes[] = {{1, 1}, {7, 13}, {64, 64}, {127, 129}, {256, 512}};
  const char* kVariants[] = {"contiguous", "x transposed", "x sliced from a wider tensor"};
  std::vector<XYCase> out;
  for (size_t k = 0; k < std::size(kShapes); ++k)
    for (int v = 0; v < 3; ++v) {
      std::optional<Case> c = make(kShapes[k].first, kShapes[k].second, v);
      if (c) c->seed = hash3(seed, 0x6163, k);  // one draw per shape: the copies hold the same values
      out.push_back({fmt::format("shape {}x{} {}", kShapes[k].first, kShapes[k].second, kVariants[v]), std::move(c)});
    }
  return out;
}

void run_cases(const CaseChecks& checks, const Op& op, Backend& backend, Runner& runner, double timeout_s,
               const std::vector<XYCase>& cases, BaselineResult& res) {
  CachingPool pool(backend);
  for (const XYCase& k : cases) {
    if (res.caught) break;
    if (!k.c) {
      ++res.cases_skipped;
      continue;
    }
    const Case& c = *k.c;
    std::vector<Tensor> t(c.tensors.size());
    const std::vector<std::vector<double>> drawn = checks.draw ? checks.draw(c) : std::vector<std::vector<double>>{};
    for (size_t j = 0; j < checks.inputs.size(); ++j) {
      const int i = checks.inputs[j];
      const TensorGeom g = c.geom(i);
      t[size_t(i)] = Tensor{pool.get(bytes_for(g)), g};
      store(backend, t[size_t(i)], checks.draw ? drawn[j] : draw_normal(c.seed, uint32_t(j), g.count()));
    }
    std::vector<std::vector<double>> want;
    if (checks.reference_first) {
      want = checks.reference(c, t);
      std::vector<Buffer> held;
      for (size_t j = 0; j < checks.outputs.size(); ++j) {
        const TensorGeom g = c.geom(checks.outputs[j]);
        Tensor ref_out{pool.get(bytes_for(g)), g};
        store(backend, ref_out, want[j]);
        held.push_back(ref_out.buf);
      }
      for (Buffer& b : held) pool.put(b);
    }
    // Every output gets its memory, the ones the rule does not test too
    // (attention's lse under a rule that looks at o only).
    for (size_t i = 0; i < c.tensors.size(); ++i)
      if (c.tensors[i].role != Role::input) {
        const TensorGeom g = c.geom(int(i));
        t[i] = Tensor{pool.get(bytes_for(g)), g};
      }
    ++res.cases_run;
    if (std::string f = call_candidate(backend, runner, op, c, t, timeout_s); !f.empty()) {
      res.caught = true, res.failed_case = k.where, res.detail = k.where + ": " + f;
      break;
    }
    if (!checks.reference_first) want = checks.reference(c, t);
    for (size_t j = 0; j < checks.outputs.size() && !res.caught; ++j) {
      const int i = checks.outputs[j];
      const std::vector<double> got = load(backend, t[size_t(i)]);
      if (checks.whole) {
        if (std::string why = checks.whole(c, i, got, want[j]); !why.empty())
          res.caught = true, res.failed_case = k.where, res.detail = k.where + ": " + why;
        continue;
      }
      const ElementTest test = checks.test(c, i);
      for (size_t e = 0; e < got.size(); ++e)
        if (!test.passes(got[e], want[j][e])) {
          res.caught = true, res.failed_case = k.where;
          res.detail = k.where + ": " + checks.detail(c, i, int64_t(e), got[e], want[j][e], test.name);
          break;
        }
    }
    for (Tensor& x : t)
      if (x.buf.data) pool.put(x.buf);
  }
  if (res.cases_run == 0 && !res.caught && !cases.empty())
    res.applicable = false, res.detail = "none of its cases fits the spec's requires and the backend's limits";
}

void run_xy_cases(const XYChecks& checks, const Op& op, Backend& backend, Runner& runner, double timeout_s,
                  const std::vector<XYCase>& cases, BaselineResult& res) {
  CaseChecks k;
  k.inputs = {checks.x}, k.outputs = {checks.y};
  k.reference = [&checks](const Case& c, std::span<const Tensor> t) {
    return std::vector<std::vector<double>>{checks.reference(c, t[size_t(checks.x)])};
  };
  k.detail = [&checks](const Case& c, int, int64_t i, double got, double want, const std::string& test) {
    return checks.detail(c, i, got, want, test);
  };
  k.test = [&checks](const Case& c, int) { return checks.test(c); };
  k.reference_first = checks.reference_first;
  run_cases(k, op, backend, runner, timeout_s, cases, res);
}

}  // namespace assay::baseline
