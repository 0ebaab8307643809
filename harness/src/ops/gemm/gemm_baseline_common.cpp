// What GEMM's three baseline rules share (gemm_baseline_*.cpp): the FP64
// reference as the framework's same-dtype result, the candidate call, plain
// cases fitted to the spec.
#include "ops/gemm/gemm_baseline_common.h"

#include <fmt/format.h>

#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_reference.h"

namespace assay::gemm {

std::vector<double> reference(Backend& backend, const Problem& c, const baseline::Tensor& a, const baseline::Tensor& b,
                              const baseline::Tensor* c0) {
  auto r = reference(backend, c, a.buf.data, b.buf.data, c0 ? c0->buf.data : nullptr);
  for (double& x : r.ref) x = round_to(c.c_type, x);
  return std::move(r.ref);
}

std::string call_candidate(Backend& backend, Runner& runner, const Problem& c, const baseline::Tensor& a,
                           const baseline::Tensor& b, const baseline::Tensor& out, double timeout_s) {
  const baseline::Tensor t[3] = {a, b, out};
  return baseline::call_candidate(backend, runner, op_of_gemm(), to_case(c), t, timeout_s);
}

Problem plain_case(const Spec& spec, int64_t m, int64_t n, int64_t k, double alpha, double beta) {
  Problem c;
  c.m = m, c.n = n, c.k = k;
  { const auto d = spec_dtypes(spec); c.a_type = d[0], c.b_type = d[1], c.c_type = d[2]; }
  c.a = make_layout(m, k, false), c.b = make_layout(k, n, false), c.c = make_layout(m, n, false);
  c.alpha = alpha, c.beta = beta;
  c.origin = "baseline";
  return c;
}

std::optional<Problem> fit(const Problem& c, const Spec& spec) {
  Spec shapes_only = spec;
  std::erase_if(shapes_only.requires_, [](const Requirement& r) {
    return r.text().find("alpha") != std::string::npos || r.text().find("beta") != std::string::npos;
  });
  return fit_requires(c, shapes_only);
}

bool within_limits(const Backend& backend, const Problem& c) {
  return baseline::within_limits(backend, op_of_gemm(), to_case(c));
}

std::string element_detail(const Problem& c, int64_t i, double got, double want, const std::string& rule) {
  return fmt::format("m={} n={} k={}: C[{},{}] = {:.9g}, expected {:.9g} ({})", c.m, c.n, c.k, i / c.n, i % c.n, got,
                     want, rule);
}

}  // namespace assay::gemm
