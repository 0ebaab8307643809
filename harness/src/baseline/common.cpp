#include "baseline/common.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "case/rng.h"
#include "gate/gate.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_reference.h"

namespace assay::baseline {

namespace {
constexpr size_t kRound = 512;  // PyTorch's caching allocator rounds requests to 512 bytes
size_t rounded(size_t bytes) { return std::max<size_t>((bytes + kRound - 1) / kRound * kRound, kRound); }
}  // namespace

CachingPool::~CachingPool() {
  for (Buffer& b : owned_) backend_.release(b);
}

Buffer CachingPool::get(size_t bytes) {
  const size_t size = rounded(bytes);
  auto it = free_.find(size);
  if (it != free_.end()) {
    // multimap keeps equal keys in insertion order: take the latest freed.
    auto last = free_.upper_bound(size);
    --last;
    Buffer b = last->second;
    free_.erase(last);
    return b;
  }
  Buffer b = backend_.allocate(size + kRound);  // room after the block (see the header)
  owned_.push_back(b);
  return b;
}

void CachingPool::put(Buffer b) {
  auto it = std::find_if(owned_.begin(), owned_.end(), [&](const Buffer& o) { return o.data == b.data; });
  if (it != owned_.end()) free_.emplace(it->bytes - kRound, *it);
}

size_t bytes_for(const TensorGeom& g) { return std::max<size_t>(size_t(g.span()) * dtype_bytes(g.dtype), 1); }

void store(Backend& backend, const Tensor& t, const std::vector<double>& values) {
  std::vector<std::byte> image(t.buf.bytes);
  backend.download(t.buf, image.data());
  const TensorGeom& g = t.geom;
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t c = 0; c < g.cols; ++c)
      store_bits(g.dtype, image.data() + g.index(r, c) * size, encode(g.dtype, values[size_t(r * g.cols + c)]));
  upload(backend, t.buf, image.data());
}

std::vector<double> load(Backend& backend, const Tensor& t) {
  std::vector<std::byte> image(t.buf.bytes);
  backend.download(t.buf, image.data());
  const TensorGeom& g = t.geom;
  const int size = dtype_bytes(g.dtype);
  std::vector<double> out(size_t(g.rows * g.cols));
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t c = 0; c < g.cols; ++c)
      out[size_t(r * g.cols + c)] = decode(g.dtype, load_bits(g.dtype, image.data() + g.index(r, c) * size));
  return out;
}

std::vector<double> draw_uniform(uint64_t seed, uint32_t stream, int64_t count) {
  std::vector<double> v(size_t(std::max<int64_t>(count, 0)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = unit_double(hash3(seed, stream, i));
  return v;
}

std::vector<double> draw_normal(uint64_t seed, uint32_t stream, int64_t count) {
  std::vector<double> v(size_t(std::max<int64_t>(count, 0)));
  const double two_pi = 6.283185307179586;
  for (size_t i = 0; i < v.size(); ++i) {
    // Box-Muller from two independent uniforms; 1 - u keeps the log finite.
    const double u1 = 1.0 - unit_double(hash3(seed, stream, 2 * i));
    const double u2 = unit_double(hash3(seed, stream, 2 * i + 1));
    v[i] = std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2);
  }
  return v;
}

std::vector<double> reference(Backend& backend, const Case& c, const Tensor& a, const Tensor& b, const Tensor* c0) {
  auto r = gemm::reference(backend, c, a.buf.data, b.buf.data, c0 ? c0->buf.data : nullptr);
  for (double& x : r.ref) x = round_to(c.c_type, x);
  return std::move(r.ref);
}

std::string call_candidate(Backend& backend, Runner& runner, const Case& c, const Tensor& a, const Tensor& b,
                           const Tensor& out, double timeout_s) {
  int64_t shapes[3][2], strides[3][2];
  DLTensor views[3];
  const Tensor* t[3] = {&a, &b, &out};
  for (int i = 0; i < 3; ++i) {
    const TensorGeom& g = t[i]->geom;
    shapes[i][0] = g.rows, shapes[i][1] = g.cols;
    strides[i][0] = g.row_stride, strides[i][1] = g.col_stride;
    const uint8_t code = g.dtype == DType::bf16 ? kDLBfloat : kDLFloat;
    views[i] = DLTensor{t[i]->buf.data, backend.device(), 2, DLDataType{code, uint8_t(dtype_bytes(g.dtype) * 8), 1},
                        shapes[i], strides[i], uint64_t(g.offset) * dtype_bytes(g.dtype)};
  }
  double scalars[2] = {c.alpha, c.beta};
  assay_call call{ASSAY_ABI_VERSION, "gemm", 2, views, 1, &views[2], 2, scalars, backend.stream(), nullptr, 0};
  const double timeout = timeout_s > 0 ? timeout_s : gemm::default_timeout(c, backend.kind());
  RunStatus s = runner.run(call, timeout);
  if (s.end == RunEnd::crashed) return "crash: " + s.failure;
  if (s.end == RunEnd::timed_out) return "hang: " + s.failure;
  if (std::string e = backend.synchronize(); !e.empty()) return "device error: " + e;
  if (!s.failure.empty()) return "kernel error: " + s.failure;
  if (s.code == ASSAY_UNSUPPORTED) return "the kernel refused the case (ASSAY_UNSUPPORTED)";
  if (s.code != ASSAY_OK) return fmt::format("assay_run returned {}", s.code);
  return {};
}

Case plain_case(const Spec& spec, int64_t m, int64_t n, int64_t k, double alpha, double beta) {
  Case c;
  c.m = m, c.n = n, c.k = k;
  c.a_type = spec.a, c.b_type = spec.b, c.c_type = spec.c;
  c.a = gemm::make_layout(m, k, false), c.b = gemm::make_layout(k, n, false), c.c = gemm::make_layout(m, n, false);
  c.alpha = alpha, c.beta = beta;
  c.origin = "baseline";
  return c;
}

std::optional<Case> fit(const Case& c, const Spec& spec) {
  Spec shapes_only = spec;
  std::erase_if(shapes_only.requires_, [](const Requirement& r) {
    return r.text().find("alpha") != std::string::npos || r.text().find("beta") != std::string::npos;
  });
  return gemm::fit_requires(c, shapes_only);
}

bool within_limits(const Backend& backend, const Case& c) {
  const CaseLimits lim = limits_for(backend);
  return double(c.m) * double(c.n) * double(c.k) <= lim.max_work && gemm::case_bytes(c) <= lim.max_bytes;
}

std::string element_detail(const Case& c, int64_t i, double got, double want, const std::string& rule) {
  return fmt::format("m={} n={} k={}: C[{},{}] = {:.9g}, expected {:.9g} ({})", c.m, c.n, c.k, i / c.n, i % c.n, got,
                     want, rule);
}

}  // namespace assay::baseline
