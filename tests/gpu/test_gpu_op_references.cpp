// Every op's device reference must agree with its host reference: the same
// inputs (the fills are bit-identical across backends), FP64 results that
// differ only by summation order. Op-generic: each family's correct cuda
// specs, its own sweep and random cases, through Op::reference.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "../samples_support.h"
#include "exec/guarded_tensor.h"
#include "ops/fp8_gemm/fp8_gemm_reference.h"
#include "ops/op.h"

using namespace assay;

namespace {

// Each tensor of the case drawn on `be` (inputs filled, outputs not), and
// where each one's data starts.
struct DrawnOn {
  std::vector<std::unique_ptr<GuardedTensor>> t;
  std::vector<const std::byte*> device;
};
DrawnOn draw_on(Backend& be, const Op& op, const Case& c) {
  DrawnOn out;
  auto& t = out.t;
  auto& device = out.device;
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    TensorGeom g = c.geom(int(i));
    t.push_back(std::make_unique<GuardedTensor>(be, g));
    TensorGeom shifted = g;
    shifted.offset += int64_t(t.back()->guard() / dtype_bytes(g.dtype));
    t.back()->paint_canary();
    if (c.tensors[i].role == Role::input || op.reads_initial(c, int(i)))
      be.fill_tensor(t.back()->buffer(), shifted, op.params_for(c, int(i)), c.seed, uint32_t(i));
    device.push_back(c.tensors[i].role == Role::output && !op.reads_initial(c, int(i)) ? nullptr : t.back()->data());
  }
  be.synchronize();
  return out;
}
// The op's FP64 reference on that backend.
std::vector<std::vector<double>> reference_on(Backend& be, const Op& op, const Case& c) {
  const DrawnOn d = draw_on(be, op, c);
  return op.reference(be, c, d.device);
}

// At most `keep` of the sweep's cases that fit `max_bytes`, spread over it.
std::vector<Case> some_cases(const Op& op, const Spec& spec, size_t keep, double max_bytes) {
  std::vector<Case> fit;
  for (Case& c : op.sweep(spec, 1, SweepTarget{BackendKind::host, max_bytes}))
    if (op.case_bytes(c) <= max_bytes) fit.push_back(std::move(c));
  std::vector<Case> out;
  const size_t step = std::max<size_t>(1, fit.size() / keep);
  for (size_t i = 0; i < fit.size(); i += step) out.push_back(fit[i]);
  GenLimits lim;
  lim.max_random_dim = 300;
  for (uint64_t i = 0; i < 12; ++i)
    if (auto r = op.random_case(spec, 7, i, lim); r && op.case_bytes(*r) <= max_bytes) out.push_back(*r);
  return out;
}

}  // namespace

TEST_CASE("every op's device reference matches its host reference", "[gpu][reference]") {
  auto gpu = make_backend(BackendKind::cuda);
  auto cpu = make_backend(BackendKind::host);
  std::set<std::string> ops_seen;
  // custom: the reference is the user's (tests/test_custom_op.cpp); hostile and
  // needle are GEMM kernels.
  for (const char* family : {"gemm", "softmax", "layernorm", "rmsnorm", "reduce", "unary", "attention", "fp8_gemm"})
    for (auto& file : testing::sample_specs(BackendKind::cuda, family)) {
      Spec spec = load_spec(file);
      if (spec.expect != "pass") continue;
      const Op& op = op_of(spec);
      ops_seen.insert(std::string(op.name()));
      for (const Case& c : some_cases(op, spec, 24, 32e6)) {
        INFO(spec.name << ": " << describe(c));
        auto d = reference_on(*gpu, op, c), h = reference_on(*cpu, op, c);
        REQUIRE(d.size() == h.size());
        for (size_t t = 0; t < h.size(); ++t) {
          REQUIRE(d[t].size() == h[t].size());
          double scale = 0;
          for (double v : h[t])
            if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
          size_t bad = 0, first = 0;
          for (size_t e = 0; e < h[t].size(); ++e) {
            double x = d[t][e], y = h[t][e];
            bool same = std::isnan(y) ? std::isnan(x)
                        : std::isinf(y) ? x == y
                                        // FP64 sums of the same terms in another order (and
                                        // libm's last bit): far inside any kernel's tolerance.
                                        : std::fabs(x - y) <= 1e-9 * (scale + std::fabs(y)) + 1e-300;
            if (!same && bad++ == 0) first = e;
          }
          INFO("tensor " << t << ": " << bad << " of " << h[t].size() << " differ, first at " << first << ": device "
                         << (bad ? d[t][first] : 0) << ", host " << (bad ? h[t][first] : 0));
          CHECK(bad == 0);
        }
      }
    }
  CHECK(ops_seen.size() >= 8);
}

// fp8_gemm's bound has a floor from each row's largest values, computed
// where the tensors live: the device's row maxima must be the host's.
TEST_CASE("fp8_gemm's device row maxima match the host's", "[gpu][reference]") {
  auto gpu = make_backend(BackendKind::cuda);
  auto cpu = make_backend(BackendKind::host);
  for (auto& file : testing::sample_specs(BackendKind::cuda, "fp8_gemm")) {
    Spec spec = load_spec(file);
    if (spec.expect != "pass") continue;
    const Op& op = op_of(spec);
    for (const Case& c : some_cases(op, spec, 16, 32e6)) {
      INFO(spec.name << ": " << describe(c));
      const DrawnOn dg = draw_on(*gpu, op, c), dc = draw_on(*cpu, op, c);
      const fp8_gemm::RowMaxima g = fp8_gemm::row_maxima(*gpu, c, dg.device), h = fp8_gemm::row_maxima(*cpu, c, dc.device);
      CHECK(g.a == h.a);
      CHECK(g.a_scale == h.a_scale);
      CHECK(g.b == h.b);
      CHECK(g.b_scale == h.b_scale);
    }
  }
}
