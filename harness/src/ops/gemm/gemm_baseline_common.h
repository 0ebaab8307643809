// What GEMM's three baseline rules share (docs/baselines.md).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "baseline/common.h"
#include "ops/gemm/gemm_problem.h"

namespace assay::gemm {

const Op& op_of_gemm();  // the registered op (gemm_op.cpp)

// FP64 reference (Eigen or cuBLAS) rounded to C's dtype, standing in for the
// framework's same-dtype result. c0 only when beta != 0.
std::vector<double> reference(Backend& backend, const Problem& c, const baseline::Tensor& a,
                              const baseline::Tensor& b, const baseline::Tensor* c0);
// Calls the candidate once (baseline::call_candidate).
std::string call_candidate(Backend& backend, Runner& runner, const Problem& c, const baseline::Tensor& a,
                           const baseline::Tensor& b, const baseline::Tensor& out, double timeout_s);
// A compact row-major case with the spec's dtypes.
Problem plain_case(const Spec& spec, int64_t m, int64_t n, int64_t k, double alpha, double beta);
// The case moved inside the spec's requires (fit_requires), with
// requirements on alpha or beta left out: each rule fixes its own scalars.
std::optional<Problem> fit(const Problem& c, const Spec& spec);
// Whether the backend takes a case this size (gate's limits_for).
bool within_limits(const Backend& backend, const Problem& c);
// Formats a failing element for BaselineResult::detail.
std::string element_detail(const Problem& c, int64_t i, double got, double want, const std::string& rule);

baseline::BaselineResult run_kernelbench(Backend& backend, Runner& runner, const Spec& spec,
                                         const baseline::BaselineOptions& opt);
baseline::BaselineResult run_tutorial(Backend& backend, Runner& runner, const Spec& spec,
                                      const baseline::BaselineOptions& opt);
baseline::BaselineResult run_assert_close(Backend& backend, Runner& runner, const Spec& spec,
                                          const baseline::BaselineOptions& opt);

}  // namespace assay::gemm
