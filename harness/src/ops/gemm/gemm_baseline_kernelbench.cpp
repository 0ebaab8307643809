// KernelBench's correctness check (src/kernelbench/eval.py,
// run_and_check_correctness) on its level-1 problem 1, square matmul:
// one fixed shape N x N x N (N = 4096; scaled down on the host backend), 5
// trials of torch.rand inputs, the reference run first, then the candidate,
// compared with torch.allclose(ref, got, atol=tol, rtol=tol).
#include <cmath>

#include <fmt/format.h>

#include "ops/gemm/gemm_baseline_common.h"
#include "case/rng.h"
#include "ops/gemm/gemm_problem.h"

namespace assay::gemm {

using baseline::BaselineOptions;
using baseline::BaselineResult;
using baseline::CachingPool;
using baseline::Stopwatch;
using baseline::Tensor;
using baseline::bytes_for;
using baseline::draw_normal;
using baseline::draw_uniform;
using baseline::load;
using baseline::store;
using baseline::torch_close;
namespace {

constexpr int kTrials = 5;        // num_correct_trials
constexpr int64_t kSize = 4096;   // level1/1_Square_matrix_multiplication_.py: N = 2048 * 2

// get_tolerance_for_precision: fp32 1e-4, fp16/bf16 1e-2 (f64 gets fp32's).
double tolerance(DType t) { return t == DType::f16 || t == DType::bf16 ? 1e-2 : 1e-4; }


}  // namespace

BaselineResult run_kernelbench(Backend& backend, Runner& runner, const Spec& spec, const BaselineOptions& opt) {
  BaselineResult res;
  res.checker = "kernelbench";
  Stopwatch clock;
  // The backend's case limits decide the size: N halves until it fits (host: 256).
  int64_t n = kSize;
  while (n > 16 && !within_limits(backend, plain_case(spec, n, n, n, 1, 0))) n /= 2;
  auto fitted = fit(plain_case(spec, n, n, n, 1.0, 0.0), spec);  // torch.matmul: alpha 1, beta 0
  if (!fitted || !within_limits(backend, *fitted)) {
    res.applicable = false, res.cases_skipped = kTrials;
    res.detail = fmt::format("its one shape ({0}x{0}x{0}) is outside the spec's requires", n);
    return res;
  }
  const Problem base = *fitted;
  const auto geom = tensors(base);
  const double tol = tolerance(base.c_type);
  CachingPool pool(backend);
  for (int trial = 0; trial < kTrials && !res.caught; ++trial) {
    Problem c = base;
    c.seed = hash3(opt.seed, 0x6b62, uint64_t(trial));  // a fresh seed per trial, from seed_num
    Tensor a{pool.get(bytes_for(geom[0])), geom[0]}, b{pool.get(bytes_for(geom[1])), geom[1]};
    store(backend, a, draw_uniform(c.seed, 0, c.m * c.k));
    store(backend, b, draw_uniform(c.seed, 1, c.k * c.n));
    // `output = model(*inputs)` first. The brief's model of memory reuse: its
    // block goes back to the allocator before the candidate's output is made,
    // so torch.empty there hands the candidate the reference's answer.
    Tensor ref_out{pool.get(bytes_for(geom[2])), geom[2]};
    const std::vector<double> ref = reference(backend, c, a, b, nullptr);
    store(backend, ref_out, ref);
    pool.put(ref_out.buf);
    Tensor out{pool.get(bytes_for(geom[2])), geom[2]};
    ++res.cases_run;
    std::string failure = call_candidate(backend, runner, c, a, b, out, opt.timeout_s);
    if (!failure.empty()) {
      res.caught = true, res.detail = fmt::format("trial {}: {}", trial + 1, failure);
      res.failed_case = fmt::format("trial {}", trial + 1);
      break;
    }
    const std::vector<double> got = load(backend, out);
    for (size_t i = 0; i < got.size(); ++i)
      if (!torch_close(ref[i], got[i], tol, tol)) {
        res.caught = true, res.failed_case = fmt::format("trial {}", trial + 1);
        res.detail = fmt::format("trial {}: {}", trial + 1,
                                 element_detail(c, int64_t(i), got[i], ref[i], fmt::format("allclose {:g}", tol)));
        break;
      }
    for (Tensor* t : {&a, &b, &out}) pool.put(t->buf);
  }
  res.seconds = clock.seconds();
  return res;
}

}  // namespace assay::gemm
