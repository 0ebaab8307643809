// The published checkers' rules as written for reductions (docs/baselines.md, "reduce"):
//  - kernelbench: KernelBench level 1 "47_Sum_reduction_over_a_dimension.py"
//    (48_Mean, 49_Max, 51_Argmax, 52_Argmin, 53_Min: the same harness):
//    x = torch.randn(batch_size, dim1, dim2), batch_size = 16, dim1 = dim2 =
//    256, reduced over one dimension (here the last: b = 16, rows = n = 256),
//    5 trials, the reference first, then the candidate,
//    torch.allclose(ref, got, atol=rtol=tol), tol 1e-4 (fp32) or 1e-2
//    (fp16/bf16), as for softmax; an index output compares the same way.
//  - tutorial: the CUDA-tutorial reduction check: square power-of-two sizes
//    128..4096, randn inputs, each row against a CPU loop with one relative
//    tolerance |got - ref| <= 1e-3 max(1, |ref|) (indices: equal),
//    NaN-blind (a comparison with NaN is false).
//  - assert_close: torch.testing.assert_close(kernel(x), torch.sum(x, -1))
//    (mean, amax, amin, argmax, argmin) with PyTorch's default rtol/atol per
//    y dtype (int64: exact), on randn inputs at a few shapes, each also with
//    x transposed in memory and sliced from a wider tensor.
#include "ops/reduce/reduce_baselines.h"

#include <cmath>

#include <fmt/format.h>

#include "baseline/common.h"
#include "case/rng.h"
#include "ops/reduce/reduce_reference.h"
#include "ops/reduce/reduce_tolerance.h"

namespace assay::reduce {

using baseline::BaselineOptions;
using baseline::BaselineResult;
using baseline::CachingPool;
using baseline::Stopwatch;
using Buf = baseline::Tensor;
using baseline::bytes_for;
using baseline::draw_normal;
using baseline::load;
using baseline::store;
using baseline::torch_close;
using baseline::torch_tolerances;

namespace {

// FP64 reference rounded to y's dtype: the framework's same-dtype result.
std::vector<double> reference(Backend& backend, const Case& c, const Settings& s, const Buf& x) {
  const rows::Shape sh = rows::shape_of(c);
  const ErrorModel e = error_model(s, Compute::f64, c.tensors[X].dtype, Subnormals::ieee);
  std::vector<double> out(size_t(sh.total_rows()));
  reference_rows(backend, sh, x.geom, x.buf.data, c.geom(Y), nullptr, e,
                 [&](const rows::RowBlock& b, const double* ref, const double*) {
                   for (int64_t i = 0; i < b.rows; ++i) out[size_t(b.row0 + i)] = round_to(c.tensors[Y].dtype, ref[i]);
                 });
  return out;
}

std::optional<Case> fit_case(const Op& op, const Spec& spec, const Case& c, const Backend& backend) {
  auto fitted = baseline::fit_shapes(op, c, spec, {});
  if (!fitted || !baseline::within_limits(backend, op, *fitted)) return std::nullopt;
  return fitted;
}

std::string detail(const Case& c, int64_t i, double got, double want, const std::string& rule) {
  const rows::Shape s = rows::shape_of(c);
  return fmt::format("rows={} n={}: y[{}] = {:.9g}, expected {:.9g} ({})", s.total_rows(), s.n, i, got, want, rule);
}

std::string call(Backend& backend, Runner& runner, const Op& op, const Case& c, const Buf& x, const Buf& y,
                 double timeout_s) {
  const Buf t[2] = {x, y};
  return baseline::call_candidate(backend, runner, op, c, t, timeout_s);
}

bool narrow(DType t) { return t == DType::f16 || t == DType::bf16; }


BaselineResult kernelbench(const Op& op, const Settings& s, Backend& backend, Runner& runner, const Spec& spec,
                           const BaselineOptions& opt) {
  BaselineResult res;
  res.checker = "kernelbench";
  Stopwatch clock;
  constexpr int kTrials = 5;
  Parts p = plain_parts(spec, s, rows::Shape{true, 16, 256, 256}, "baseline");
  auto fitted = fit_case(op, spec, make_case(p), backend);
  if (!fitted) {
    res.applicable = false, res.cases_skipped = kTrials;
    res.detail = "its one shape (16 x 256 x 256) is outside the spec's requires or the backend's limits";
    return res;
  }
  const Case base = *fitted;
  const double tol = narrow(base.tensors[X].dtype) ? 1e-2 : 1e-4;
  CachingPool pool(backend);
  for (int trial = 0; trial < kTrials && !res.caught; ++trial) {
    Case c = base;
    c.seed = hash3(opt.seed, 0x7264, uint64_t(trial));
    const TensorGeom gx = c.geom(X), gy = c.geom(Y);
    Buf x{pool.get(bytes_for(gx)), gx};
    store(backend, x, draw_normal(c.seed, 0, gx.count()));
    // The reference's output goes back to the allocator before the
    // candidate's is made (GEMM's kernelbench rule says why).
    Buf ref_out{pool.get(bytes_for(gy)), gy};
    const std::vector<double> ref = reference(backend, c, s, x);
    store(backend, ref_out, ref);
    pool.put(ref_out.buf);
    Buf y{pool.get(bytes_for(gy)), gy};
    ++res.cases_run;
    if (std::string f = call(backend, runner, op, c, x, y, opt.timeout_s); !f.empty()) {
      res.caught = true, res.failed_case = fmt::format("trial {}", trial + 1);
      res.detail = fmt::format("trial {}: {}", trial + 1, f);
      break;
    }
    const std::vector<double> got = load(backend, y);
    for (size_t i = 0; i < got.size(); ++i)
      if (!torch_close(ref[i], got[i], tol, tol)) {  // allclose(ref, got): atol + rtol * |got|
        res.caught = true, res.failed_case = fmt::format("trial {}", trial + 1);
        res.detail = fmt::format("trial {}: {}", trial + 1,
                                 detail(c, int64_t(i), got[i], ref[i], fmt::format("allclose {:g}", tol)));
        break;
      }
    for (Buf* t : {&x, &y}) pool.put(t->buf);
  }
  res.seconds = clock.seconds();
  return res;
}

BaselineResult tutorial(const Op& op, const Settings& s, Backend& backend, Runner& runner, const Spec& spec,
                        const BaselineOptions& opt) {
  BaselineResult res;
  res.checker = "tutorial";
  Stopwatch clock;
  CachingPool pool(backend);
  for (int64_t size = 128; size <= 4096 && !res.caught; size *= 2) {
    auto fitted = fit_case(op, spec, make_case(plain_parts(spec, s, rows::Shape{false, 1, size, size}, "baseline")),
                           backend);
    if (!fitted) {
      ++res.cases_skipped;
      continue;
    }
    Case c = *fitted;
    c.seed = hash3(opt.seed, 0x7475, uint64_t(size));
    const TensorGeom gx = c.geom(X), gy = c.geom(Y);
    Buf x{pool.get(bytes_for(gx)), gx}, y{pool.get(bytes_for(gy)), gy};
    store(backend, x, draw_normal(c.seed, 0, gx.count()));
    const std::vector<double> ref = reference(backend, c, s, x);
    ++res.cases_run;
    if (std::string f = call(backend, runner, op, c, x, y, opt.timeout_s); !f.empty()) {
      res.caught = true, res.failed_case = fmt::format("size {}", size);
      res.detail = fmt::format("size {}: {}", size, f);
      break;
    }
    const std::vector<double> got = load(backend, y);
    const bool index = is_arg(s.op);
    for (size_t i = 0; i < got.size() && !res.caught; ++i) {
      const double d = std::fabs(ref[i] - got[i]);
      if (index ? d > 0 : d > 1e-3 * std::max(1.0, std::fabs(ref[i]))) {  // false for NaN: NaN-blind
        res.caught = true, res.failed_case = fmt::format("size {}", size);
        res.detail = detail(c, int64_t(i), got[i], ref[i], index ? "index differs" : "relative diff > 1e-3");
      }
    }
    for (Buf* t : {&x, &y}) pool.put(t->buf);
  }
  if (res.cases_run == 0 && !res.caught)
    res.applicable = false, res.detail = "none of its sizes fits the spec's requires and the backend's limits";
  res.seconds = clock.seconds();
  return res;
}


BaselineResult assert_close(const Op& op, const Settings& s, Backend& backend, Runner& runner, const Spec& spec,
                            const BaselineOptions& opt) {
  BaselineResult res;
  res.checker = "assert_close";
  Stopwatch clock;
  constexpr std::pair<int64_t, int64_t> kShapes[] = {{1, 1}, {7, 13}, {64, 64}, {127, 129}, {256, 512}};
  const char* kVariants[] = {"contiguous", "x transposed", "x sliced from a wider tensor"};
  CachingPool pool(backend);
  for (size_t k = 0; k < std::size(kShapes) && !res.caught; ++k)
    for (int v = 0; v < 3 && !res.caught; ++v) {
      Parts p = plain_parts(spec, s, rows::Shape{false, 1, kShapes[k].first, kShapes[k].second}, "baseline");
      if (v == 1) p.x.col_major = true;
      if (v == 2) p.x.pad = 3;
      auto fitted = fit_case(op, spec, make_case(p), backend);
      if (!fitted) {
        ++res.cases_skipped;
        continue;
      }
      Case c = *fitted;
      c.seed = hash3(opt.seed, 0x6163, k);  // one draw per shape: the copies hold the same values
      const TensorGeom gx = c.geom(X), gy = c.geom(Y);
      const auto tol = torch_tolerances(gy.dtype);
      Buf x{pool.get(bytes_for(gx)), gx}, y{pool.get(bytes_for(gy)), gy};
      store(backend, x, draw_normal(c.seed, 0, gx.count()));
      ++res.cases_run;
      const std::string where = fmt::format("shape {}x{} {}", kShapes[k].first, kShapes[k].second, kVariants[v]);
      if (std::string f = call(backend, runner, op, c, x, y, opt.timeout_s); !f.empty()) {
        res.caught = true, res.failed_case = where, res.detail = where + ": " + f;
        break;
      }
      const std::vector<double> got = load(backend, y), want = reference(backend, c, s, x);
      for (size_t i = 0; i < got.size() && !res.caught; ++i)
        if (!torch_close(got[i], want[i], tol.first, tol.second)) {
          res.caught = true, res.failed_case = where;
          res.detail = where + ": " +
                       detail(c, int64_t(i), got[i], want[i],
                              fmt::format("assert_close rtol {:g} atol {:g}", tol.first, tol.second));
        }
      for (Buf* t : {&x, &y}) pool.put(t->buf);
    }
  res.seconds = clock.seconds();
  return res;
}

}  // namespace

BaselineResult run_baseline(const Op& op, const Settings& s, std::string_view rule, Backend& backend, Runner& runner,
                            const Spec& spec, const BaselineOptions& opt) {
  if (rule == "kernelbench") return kernelbench(op, s, backend, runner, spec, opt);
  if (rule == "tutorial") return tutorial(op, s, backend, runner, spec, opt);
  if (rule == "assert_close") return assert_close(op, s, backend, runner, spec, opt);
  BaselineResult r;
  r.checker = std::string(rule), r.applicable = false, r.detail = "no such rule for reduce";
  return r;
}

}  // namespace assay::reduce
