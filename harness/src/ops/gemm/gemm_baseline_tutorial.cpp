// The SGEMM-tutorial check (siboehm/SGEMM_CUDA, sgemm.cu and src/runner.cu,
// copied by many tutorials): square power-of-two sizes 128..4096, alpha 0.5,
// beta 3, inputs from randomize_matrix, the reference (cuBLAS) into C_ref and
// then the kernel into C, both starting from the same C, each size checked
// once with verify_matrix: fail when fabs(ref - out) > 0.01. NaN-blind, since
// a comparison with NaN is false.
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
namespace {

constexpr double kAlpha = 0.5, kBeta = 3.0, kTolerance = 0.01;
constexpr int kTimedCalls = 50;  // repeat_times: timed, never checked

// randomize_matrix: (rand() % 5) + 0.01 * (rand() % 5), negated half the time.
std::vector<double> randomize_matrix(uint64_t seed, uint32_t stream, int64_t count) {
  std::vector<double> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i) {
    const uint64_t h = hash3(seed, stream, i);
    const double x = float(double(h % 5) + 0.01 * double((h >> 8) % 5));  // the tutorial's float tmp
    v[i] = (h >> 16) % 2 == 0 ? x : -x;
  }
  return v;
}

}  // namespace

BaselineResult run_tutorial(Backend& backend, Runner& runner, const Spec& spec, const BaselineOptions& opt) {
  BaselineResult res;
  res.checker = "tutorial";
  Stopwatch clock;
  if (spec_dtypes(spec)[2] == DType::f16 || spec_dtypes(spec)[2] == DType::bf16) {
    res.applicable = false;
    res.detail = "the rule is written for fp32 (SGEMM) outputs: an absolute 0.01 cannot hold for 16-bit C";
    return res;
  }
  // The sizes this backend takes; cases moved inside the spec's requires.
  std::vector<Problem> cases;
  for (int64_t s = 128; s <= 4096; s *= 2) {
    auto c = fit(plain_case(spec, s, s, s, kAlpha, kBeta), spec);
    if (c && within_limits(backend, *c)) cases.push_back(*c);
    else ++res.cases_skipped;
  }
  if (cases.empty()) {
    res.applicable = false, res.detail = "none of its sizes fits the spec's requires and the backend's limits";
    return res;
  }
  // Like sgemm.cu: A, B, C allocated once at the largest size and filled once;
  // each size uses the start of them.
  size_t bytes[3] = {1, 1, 1};
  for (const Problem& c : cases) {
    auto g = tensors(c);
    for (int i = 0; i < 3; ++i) bytes[i] = std::max(bytes[i], bytes_for(g[i]));
  }
  CachingPool pool(backend);
  Tensor t[3];
  for (int i = 0; i < 3; ++i) {
    t[i].buf = pool.get(bytes[i]);
    const DType dt = spec_dtypes(spec)[size_t(i)];
    const int64_t count = int64_t(bytes[i] / dtype_bytes(dt));
    t[i].geom = TensorGeom::matrix(dt, 1, count, count, 1, 0);  // the whole buffer as one row
    store(backend, t[i], randomize_matrix(opt.seed, uint32_t(i), count));
  }
  for (const Problem& c : cases) {
    auto g = tensors(c);
    for (int i = 0; i < 3; ++i) t[i].geom = g[i];
    const std::vector<double> ref = reference(backend, c, t[0], t[1], &t[2]);  // cuBLAS into dC_ref first
    ++res.cases_run;
    std::string failure = call_candidate(backend, runner, c, t[0], t[1], t[2], opt.timeout_s);
    if (!failure.empty()) {
      res.caught = true, res.detail = fmt::format("size {}: {}", c.m, failure);
      res.failed_case = fmt::format("size {}", c.m);
      break;
    }
    const std::vector<double> got = load(backend, t[2]);
    for (size_t i = 0; i < got.size() && !res.caught; ++i)
      if (std::fabs(ref[i] - got[i]) > kTolerance) {  // false for NaN: NaN-blind, as published
        res.caught = true, res.failed_case = fmt::format("size {}", c.m);
        res.detail = element_detail(c, int64_t(i), got[i], ref[i], "|diff| > 0.01");
      }
    if (res.caught) break;
    // sgemm.cu then times 50 more calls on the same buffers without checking
    // them (they matter to kernels that count calls); only a dead process
    // would stop it. Then it copies dC_ref into dC: the next size starts from
    // this size's answer.
    for (int j = 0; j < kTimedCalls && !res.caught; ++j) {
      std::string f = call_candidate(backend, runner, c, t[0], t[1], t[2], opt.timeout_s);
      if (f.starts_with("crash") || f.starts_with("hang") || f.starts_with("device error"))
        res.caught = true, res.failed_case = fmt::format("size {}", c.m),
        res.detail = fmt::format("size {}, timed call {}: {}", c.m, j + 1, f);
    }
    if (res.caught) break;
    store(backend, t[2], ref);
  }
  res.seconds = clock.seconds();
  return res;
}

}  // namespace assay::gemm
