// The published checkers' rules as written for unary activations
// (docs/baselines.md, "unary activations"):
//  - kernelbench: KernelBench level 1 19_ReLU, 21_Sigmoid, 22_Tanh,
//    25_Swish (silu), 26_GELU_ (erf gelu), 88_MinGPTNewGelu (gelu_tanh); exp
//    has no problem of its own and gets the same harness. The revision the
//    softmax and GEMM rules use: x = torch.randn(batch_size, dim),
//    batch_size = 16 * 2 * 2, dim = 16384 * 2 * 2 (scaled down on the host);
//    5 trials, reference first and its output freed before the candidate's
//    is allocated; torch.allclose atol = rtol = 1e-4 (1e-2 for 16-bit).
//  - tutorial: square power-of-two sizes 128..4096, contiguous, randn, one
//    absolute tolerance (1e-4; 1e-2 for 16-bit outputs), NaN-blind.
//  - assert_close: PyTorch's default rtol/atol per dtype on randn inputs at
//    five shapes, each also with x transposed and sliced from a wider tensor.
#include "ops/unary/unary_baselines.h"

#include <cmath>

#include <fmt/format.h>

#include "baseline/common.h"
#include "case/rng.h"
#include "ops/unary/unary_reference.h"
#include "ops/unary/unary_tolerance.h"

namespace assay::unary {

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
  const Shape sh = rows::shape_of(c);
  const ErrorModel e = error_model(s, Compute::f64, c.tensors[X].dtype);
  std::vector<double> out(size_t(sh.total_rows()) * size_t(sh.n));
  reference_blocks(backend, sh, x.geom, x.buf.data, e, [&](const rows::RowBlock& b, const double* ref, const double*) {
    if (!ref) return;
    for (int64_t i = 0; i < b.rows * sh.n; ++i) out[size_t(b.row0 * sh.n + i)] = round_to(c.tensors[Y].dtype, ref[i]);
  });
  return out;
}

std::optional<Case> fit_case(const Op& op, const Spec& spec, const Case& c, const Backend& backend) {
  auto fitted = baseline::fit_shapes(op, c, spec, {});
  if (!fitted || !baseline::within_limits(backend, op, *fitted)) return std::nullopt;
  return fitted;
}

Case plain(const Spec& spec, int64_t rows, int64_t n) {
  return make_case(plain_parts(spec, Shape{false, 1, rows, n}, "baseline"));
}

std::string element_detail(const Case& c, int64_t i, double got, double want, const std::string& rule) {
  const Shape s = rows::shape_of(c);
  return fmt::format("rows={} n={}: y[{},{}] = {:.9g}, expected {:.9g} ({})", s.rows, s.n, i / s.n, i % s.n, got,
                     want, rule);
}

std::string call(Backend& backend, Runner& runner, const Op& op, const Case& c, const Buf& x, const Buf& y,
                 double timeout_s) {
  const Buf t[2] = {x, y};
  return baseline::call_candidate(backend, runner, op, c, t, timeout_s);
}

bool narrow(DType t) { return t == DType::f16 || t == DType::bf16; }

// torch.allclose(a, b, rtol, atol) and assert_close: |a - b| <= atol + rtol |scale|;
// NaN never close; infinities only to themselves.
bool close(double got, double want, double atol, double rtol, double scale) {
  if (std::isnan(got) || std::isnan(want)) return false;
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::fabs(got - want) <= atol + rtol * std::fabs(scale);
}

std::string_view problem_of(Fn f) {
  switch (f) {
    case Fn::relu: return "19_ReLU";
    case Fn::sigmoid: return "21_Sigmoid";
    case Fn::tanh: return "22_Tanh";
    case Fn::silu: return "25_Swish";
    case Fn::gelu: return "26_GELU_";
    case Fn::gelu_tanh: return "88_MinGPTNewGelu";
    default: return "19_ReLU's harness";
  }
}

BaselineResult kernelbench(const Op& op, const Settings& s, Backend& backend, Runner& runner, const Spec& spec,
                           const BaselineOptions& opt) {
  BaselineResult res;
  res.checker = "kernelbench";
  Stopwatch clock;
  constexpr int kTrials = 5;
  const int64_t rows = 16 * 2 * 2;
  int64_t n = 16384 * 2 * 2;
  while (n > 64 && !baseline::within_limits(backend, op, plain(spec, rows, n))) n /= 2;
  auto fitted = fit_case(op, spec, plain(spec, rows, n), backend);
  if (!fitted) {
    res.applicable = false, res.cases_skipped = kTrials;
    res.detail = fmt::format("its one shape ({} x {}, {}) is outside the spec's requires", rows, n, problem_of(s.fn));
    return res;
  }
  const Case base = *fitted;
  const double tol = narrow(base.tensors[Y].dtype) ? 1e-2 : 1e-4;
  CachingPool pool(backend);
  for (int trial = 0; trial < kTrials && !res.caught; ++trial) {
    Case c = base;
    c.seed = hash3(opt.seed, 0x756b, uint64_t(trial));
    const TensorGeom gx = c.geom(X), gy = c.geom(Y);
    Buf x{pool.get(bytes_for(gx)), gx};
    store(backend, x, draw_normal(c.seed, 0, gx.count()));
    // The reference's output goes back to the allocator before the
    // candidate's is made: a kernel that writes nothing finds the answer there.
    Buf ref_out{pool.get(bytes_for(gy)), gy};
    const std::vector<double> ref = reference(backend, c, s, x);
    store(backend, ref_out, ref);
    pool.put(ref_out.buf);
    Buf y{pool.get(bytes_for(gy)), gy};
    ++res.cases_run;
    const std::string where = fmt::format("trial {}", trial + 1);
    if (std::string f = call(backend, runner, op, c, x, y, opt.timeout_s); !f.empty()) {
      res.caught = true, res.failed_case = where, res.detail = where + ": " + f;
      break;
    }
    const std::vector<double> got = load(backend, y);
    for (size_t i = 0; i < got.size(); ++i)
      if (!close(ref[i], got[i], tol, tol, got[i])) {  // allclose scales rtol by its second argument
        res.caught = true, res.failed_case = where;
        res.detail = where + ": " + element_detail(c, int64_t(i), got[i], ref[i], fmt::format("allclose {:g}", tol));
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
    auto fitted = fit_case(op, spec, plain(spec, size, size), backend);
    if (!fitted) {
      ++res.cases_skipped;
      continue;
    }
    Case c = *fitted;
    c.seed = hash3(opt.seed, 0x7475, uint64_t(size));
    const TensorGeom gx = c.geom(X), gy = c.geom(Y);
    const double tol = narrow(gy.dtype) ? 1e-2 : 1e-4;
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
    for (size_t i = 0; i < got.size() && !res.caught; ++i)
      if (std::fabs(ref[i] - got[i]) > tol) {  // false for NaN: NaN-blind
        res.caught = true, res.failed_case = fmt::format("size {}", size);
        res.detail = element_detail(c, int64_t(i), got[i], ref[i], fmt::format("|diff| > {:g}", tol));
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
      Parts p = plain_parts(spec, Shape{false, 1, kShapes[k].first, kShapes[k].second}, "baseline");
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
      const auto [rtol, atol] = torch_tolerances(gy.dtype);
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
        if (!close(got[i], want[i], atol, rtol, want[i])) {
          res.caught = true, res.failed_case = where;
          res.detail = where + ": " +
                       element_detail(c, int64_t(i), got[i], want[i],
                                      fmt::format("assert_close rtol {:g} atol {:g}", rtol, atol));
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
  r.checker = std::string(rule), r.applicable = false, r.detail = "no such rule for unary";
  return r;
}

}  // namespace assay::unary
