// The published checkers' rules as written for the norm family
// (docs/baselines.md, "layernorm and rmsnorm"):
//  - kernelbench: KernelBench level 1 "40_LayerNorm.py" (nn.LayerNorm over
//    normalized_shape (features, dim1, dim2) = (64, 256, 256) of a
//    torch.randn(16, 64, 256, 256): 16 rows of 4,194,304; weight ones, bias
//    zeros, eps 1e-5) and "36_RMSNorm_.py" (x / sqrt(mean(x^2, dim=1) + eps)
//    over the 64 features of the same tensor: rows of 64 strided by 65,536,
//    no weight, i.e. ones); 5 trials, the reference first (its output back to
//    the pool before the candidate's is taken), torch.allclose with
//    atol = rtol = 1e-4 (fp32) or 1e-2 (fp16/bf16), y only (the model's
//    output). Scaled down on the host to 2^20 elements.
//  - tutorial: Triton's layer-norm tutorial (05-layer-norm.py,
//    test_layer_norm): M = 1151, N = 8192, x = -2.3 + 0.5 * randn, weight and
//    bias torch.rand, eps 1e-5, torch.torch_close(y_tri, y_ref, atol=1e-2,
//    rtol=0), y only; rmsnorm the same without bias. Host: M halves to fit 2^20.
//  - assert_close: torch.testing.assert_close on every output with
//    PyTorch's default rtol/atol per dtype, randn x, weight and bias, five
//    shapes, each also with x transposed and x sliced from a wider tensor.
#include "ops/norm/norm_baselines.h"

#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "baseline/common.h"
#include "case/rng.h"
#include "ops/norm/norm_reference.h"
#include "ops/norm/norm_sweep.h"
#include "ops/norm/norm_tolerance.h"

namespace assay::norm {

using baseline::BaselineOptions;
using baseline::BaselineResult;
using baseline::CachingPool;
using baseline::Stopwatch;
using Buf = baseline::Tensor;
using baseline::bytes_for;
using baseline::load;
using baseline::store;
using baseline::torch_close;
using baseline::torch_tolerances;

namespace {

constexpr double kHostElements = double(1 << 20);

// The FP64 reference of every output, rounded to its dtype (the framework's
// same-dtype result), per slot: y rows x n, mean and rstd one per row.
std::vector<std::vector<double>> reference(Backend& backend, const Case& c, const Settings& s,
                                           const std::vector<Buf>& t) {
  const rows::Shape sh = rows::shape_of(c);
  const bool rms = s.rms;
  const ErrorModel e = error_model(s, Compute::f64, c, 1.0);
  Inputs in;
  in.x = t[0].buf.data, in.gx = t[0].geom, in.w = t[1].buf.data, in.gw = t[1].geom;
  if (!rms) in.b = t[2].buf.data, in.gb = t[2].geom;
  std::vector<std::vector<double>> out(kSlots);
  out[Y].resize(size_t(sh.total_rows() * sh.n));
  out[MEAN].resize(size_t(sh.total_rows())), out[RSTD].resize(size_t(sh.total_rows()));
  const DType ty = c.tensors[size_t(tensor_index(rms, Y))].dtype;
  reference_rows(backend, sh, in, e, [&](const rows::RowBlock& b, const BlockOut& o) {
    for (int64_t i = 0; i < b.rows * sh.n; ++i) out[Y][size_t(b.row0 * sh.n + i)] = round_to(ty, o.y_ref[i]);
    if (rms) return;
    for (int64_t r = 0; r < b.rows; ++r) {
      out[MEAN][size_t(b.row0 + r)] = round_to(c.tensors[MEAN].dtype, o.stat[MeanRef][r]);
      out[RSTD][size_t(b.row0 + r)] = round_to(c.tensors[RSTD].dtype, o.stat[RstdRef][r]);
    }
  });
  return out;
}

std::optional<Case> fit_case(const Op& op, const Spec& spec, const Case& c, const Backend& backend) {
  auto fitted = baseline::fit_shapes(op, c, spec, {});
  if (!fitted || !baseline::within_limits(backend, op, *fitted)) return std::nullopt;
  return fitted;
}

bool narrow(DType t) { return t == DType::f16 || t == DType::bf16; }

std::vector<Buf> allocate(CachingPool& pool, const Case& c) {
  std::vector<Buf> t;
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const TensorGeom g = c.geom(int(i));
    t.push_back(Buf{pool.get(bytes_for(g)), g});
  }
  return t;
}
void release(CachingPool& pool, std::vector<Buf>& t) {
  for (Buf& b : t) pool.put(b.buf);
}

std::string call(Backend& backend, Runner& runner, const Op& op, const Case& c, const std::vector<Buf>& t,
                 double timeout_s) {
  return baseline::call_candidate(backend, runner, op, c, t, timeout_s);
}

// The first element of output `slot` that `close(got, want)` rejects, as a detail; "" if none.
template <class Close>
std::string first_bad(const Case& c, bool rms, int slot, const std::vector<double>& got,
                      const std::vector<double>& want, Close close, const std::string& rule) {
  const int64_t n = rows::shape_of(c).n;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    if (!close(got[i], want[i])) {
      const std::string at = slot == Y ? fmt::format("y[{},{}]", int64_t(i) / n, int64_t(i) % n)
                                       : fmt::format("{}[{}]", slot_name(slot), i);
      (void)rms;
      return fmt::format("{} = {:.9g}, expected {:.9g} ({})", at, got[i], want[i], rule);
    }
  return "";
}


std::vector<double> filled(int64_t count, double v) { return std::vector<double>(size_t(count), v); }

BaselineResult kernelbench(const Op& op, const Settings& s, Backend& backend, Runner& runner, const Spec& spec,
                           const BaselineOptions& opt) {
  BaselineResult res;
  res.checker = "kernelbench";
  Stopwatch clock;
  constexpr int kTrials = 5;
  const bool host = backend.kind() == BackendKind::host;
  Parts p = plain_parts(spec, s.rms, rows::Shape{false, 1, 16, 64 * 256 * 256}, "baseline");
  if (s.rms) {  // features (64) reduced, 16 x 65536 positions: rows strided by 65536
    p.shape = rows::Shape{true, 16, 256 * 256, 64};
    p.layout[X] = p.layout[Y] = rows::transposed();
    while (host && p.shape.elements() > kHostElements) p.shape.rows /= 2;
  } else {
    while (host && p.shape.elements() > kHostElements) p.shape.n /= 2;
  }
  auto fitted = fit_case(op, spec, make_case(p), backend);
  if (!fitted) {
    res.applicable = false, res.cases_skipped = kTrials;
    res.detail = "its one shape is outside the spec's requires or the backend's limits";
    return res;
  }
  const Case base = *fitted;
  const int y = tensor_index(s.rms, Y);
  const double tol = narrow(base.tensors[size_t(y)].dtype) ? 1e-2 : 1e-4;
  CachingPool pool(backend);
  for (int trial = 0; trial < kTrials && !res.caught; ++trial) {
    Case c = base;
    c.seed = hash3(opt.seed, 0x6b62, uint64_t(trial));
    std::vector<Buf> t = allocate(pool, c);
    store(backend, t[0], baseline::draw_normal(c.seed, 0, t[0].geom.count()));
    const int64_t n = rows::shape_of(c).n;
    store(backend, t[1], filled(n, 1.0));  // nn.LayerNorm's weight: ones
    if (!s.rms) store(backend, t[2], filled(n, 0.0));  // bias: zeros
    // The reference's output goes back to the allocator before the candidate's is made.
    pool.put(t[size_t(y)].buf);
    Buf ref_out{pool.get(bytes_for(t[size_t(y)].geom)), t[size_t(y)].geom};
    const auto ref = reference(backend, c, s, t);
    store(backend, ref_out, ref[Y]);
    pool.put(ref_out.buf);
    t[size_t(y)].buf = pool.get(bytes_for(t[size_t(y)].geom));
    ++res.cases_run;
    const std::string where = fmt::format("trial {}", trial + 1);
    if (std::string f = call(backend, runner, op, c, t, opt.timeout_s); !f.empty()) {
      res.caught = true, res.failed_case = where, res.detail = where + ": " + f;
      break;
    }
    const std::string bad = first_bad(c, s.rms, Y, load(backend, t[size_t(y)]), ref[Y],
                                      [&](double got, double want) { return torch_close(want, got, tol, tol); },
                                      fmt::format("allclose {:g}", tol));
    if (!bad.empty()) res.caught = true, res.failed_case = where, res.detail = where + ": " + bad;
    release(pool, t);
  }
  res.seconds = clock.seconds();
  return res;
}

BaselineResult tutorial(const Op& op, const Settings& s, Backend& backend, Runner& runner, const Spec& spec,
                        const BaselineOptions& opt) {
  BaselineResult res;
  res.checker = "tutorial";
  Stopwatch clock;
  Parts p = plain_parts(spec, s.rms, rows::Shape{false, 1, 1151, 8192}, "baseline");
  while (backend.kind() == BackendKind::host && p.shape.elements() > kHostElements) p.shape.rows /= 2;
  auto fitted = fit_case(op, spec, make_case(p), backend);
  if (!fitted) {
    res.applicable = false, res.cases_skipped = 1;
    res.detail = "its one shape is outside the spec's requires or the backend's limits";
    return res;
  }
  Case c = *fitted;
  c.seed = hash3(opt.seed, 0x7475, 0);
  CachingPool pool(backend);
  std::vector<Buf> t = allocate(pool, c);
  std::vector<double> x = baseline::draw_normal(c.seed, 0, t[0].geom.count());
  for (double& v : x) v = -2.3 + 0.5 * v;
  store(backend, t[0], x);
  store(backend, t[1], baseline::draw_uniform(c.seed, 1, t[1].geom.count()));
  if (!s.rms) store(backend, t[2], baseline::draw_uniform(c.seed, 2, t[2].geom.count()));
  const int y = tensor_index(s.rms, Y);
  ++res.cases_run;
  const std::string where = fmt::format("M={} N={}", rows::shape_of(c).rows, rows::shape_of(c).n);
  if (std::string f = call(backend, runner, op, c, t, opt.timeout_s); !f.empty()) {
    res.caught = true, res.failed_case = where, res.detail = where + ": " + f;
  } else {
    const auto ref = reference(backend, c, s, t);
    const std::string bad = first_bad(c, s.rms, Y, load(backend, t[size_t(y)]), ref[Y],
                                      [](double got, double want) { return torch_close(got, want, 0.0, 1e-2); },
                                      "allclose atol 1e-2 rtol 0");
    if (!bad.empty()) res.caught = true, res.failed_case = where, res.detail = where + ": " + bad;
  }
  release(pool, t);
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
      Parts p = plain_parts(spec, s.rms, rows::Shape{false, 1, kShapes[k].first, kShapes[k].second}, "baseline");
      if (v == 1) p.layout[X] = rows::transposed();
      if (v == 2) p.layout[X] = rows::padded(3);
      auto fitted = fit_case(op, spec, make_case(p), backend);
      if (!fitted) {
        ++res.cases_skipped;
        continue;
      }
      Case c = *fitted;
      c.seed = hash3(opt.seed, 0x6163, k);  // one draw per shape: the copies hold the same values
      std::vector<Buf> t = allocate(pool, c);
      for (int i = 0; i < c.num_inputs(); ++i)
        store(backend, t[size_t(i)], baseline::draw_normal(c.seed, uint32_t(i), t[size_t(i)].geom.count()));
      ++res.cases_run;
      const std::string where = fmt::format("shape {}x{} {}", kShapes[k].first, kShapes[k].second, kVariants[v]);
      if (std::string f = call(backend, runner, op, c, t, opt.timeout_s); !f.empty()) {
        res.caught = true, res.failed_case = where, res.detail = where + ": " + f;
        break;
      }
      const auto ref = reference(backend, c, s, t);
      std::vector<int> checked{Y};
      if (!s.rms && s.writes_stats) checked = {Y, MEAN, RSTD};  // native_layer_norm's three outputs
      for (int slot : checked) {
        const int i = tensor_index(s.rms, slot);
        const auto tol = torch_tolerances(c.tensors[size_t(i)].dtype);
        const std::string bad = first_bad(c, s.rms, slot, load(backend, t[size_t(i)]), ref[size_t(slot)],
                                          [&](double got, double want) { return torch_close(got, want, tol.first, tol.second); },
                                          fmt::format("assert_close rtol {:g} atol {:g}", tol.first, tol.second));
        if (!bad.empty()) {
          res.caught = true, res.failed_case = where, res.detail = where + ": " + bad;
          break;
        }
      }
      release(pool, t);
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
  r.checker = std::string(rule), r.applicable = false, r.detail = fmt::format("no such rule for {}", op_name(s.rms));
  return r;
}

}  // namespace assay::norm
