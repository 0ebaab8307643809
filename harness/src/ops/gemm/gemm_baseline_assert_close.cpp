// A PyTorch-style unit test: torch.testing.assert_close(kernel(a, b),
// torch.matmul(a, b)) with its default tolerances, on torch.randn inputs at a
// handful of shapes, each also with non-contiguous copies of the inputs (as
// OpInfo tests do), which must match too.
#include <cmath>

#include <fmt/format.h>

#include "ops/gemm/gemm_baseline_common.h"
#include "case/rng.h"
#include "ops/gemm/gemm_generator.h"
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
using baseline::torch_tolerances;
namespace {

struct Shape {
  int64_t m, n, k;
};
constexpr Shape kShapes[] = {{1, 1, 1}, {7, 13, 5}, {64, 64, 64}, {127, 129, 65}, {256, 512, 128}};
constexpr int64_t kPad = 3;  // extra columns of the wider tensor a padded view is sliced from



// Variant 0: contiguous. 1: A transposed in memory (a.mT.contiguous().mT),
// B sliced from a wider tensor. 2: A sliced, B transposed.
Problem variant(Problem c, int v) {
  if (v == 1) c.a = make_layout(c.m, c.k, true), c.b = make_layout(c.k, c.n, false, kPad);
  if (v == 2) c.a = make_layout(c.m, c.k, false, kPad), c.b = make_layout(c.k, c.n, true);
  return c;
}
const char* kVariantNames[] = {"contiguous", "A transposed, B padded", "A padded, B transposed"};

}  // namespace

BaselineResult run_assert_close(Backend& backend, Runner& runner, const Spec& spec, const BaselineOptions& opt) {
  BaselineResult res;
  res.checker = "assert_close";
  Stopwatch clock;
  const auto tol = torch_tolerances(spec_dtypes(spec)[2]);
  CachingPool pool(backend);
  for (size_t s = 0; s < std::size(kShapes) && !res.caught; ++s) {
    for (int v = 0; v < 3 && !res.caught; ++v) {
      const Shape& sh = kShapes[s];
      auto fitted = fit(variant(plain_case(spec, sh.m, sh.n, sh.k, 1.0, 0.0), v), spec);
      if (!fitted || !within_limits(backend, *fitted)) {
        ++res.cases_skipped;
        continue;
      }
      Problem c = *fitted;
      c.seed = hash3(opt.seed, 0x7463, s);  // one draw per shape: the copies hold the same values
      auto g = tensors(c);
      Tensor a{pool.get(bytes_for(g[0])), g[0]}, b{pool.get(bytes_for(g[1])), g[1]};
      store(backend, a, draw_normal(c.seed, 0, c.m * c.k));
      store(backend, b, draw_normal(c.seed, 1, c.k * c.n));
      Tensor out{pool.get(bytes_for(g[2])), g[2]};  // the kernel's fresh output (torch.empty)
      ++res.cases_run;
      const std::string where = fmt::format("shape {}x{}x{} {}", sh.m, sh.n, sh.k, kVariantNames[v]);
      // The actual argument is evaluated first, then the expected one.
      if (std::string f = call_candidate(backend, runner, c, a, b, out, opt.timeout_s); !f.empty()) {
        res.caught = true, res.failed_case = where, res.detail = where + ": " + f;
        break;
      }
      const std::vector<double> got = load(backend, out);
      const std::vector<double> want = reference(backend, c, a, b, nullptr);
      for (size_t i = 0; i < got.size() && !res.caught; ++i)
        if (!torch_close(got[i], want[i], tol.first, tol.second)) {
          res.caught = true, res.failed_case = where;
          res.detail = where + ": " +
                       element_detail(c, int64_t(i), got[i], want[i],
                                      fmt::format("assert_close rtol {:g} atol {:g}", tol.first, tol.second));
        }
      for (Tensor* t : {&a, &b, &out}) pool.put(t->buf);
    }
  }
  res.seconds = clock.seconds();
  return res;
}

}  // namespace assay::gemm
