#include "baseline/common.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "case/rng.h"
#include "gate/gate.h"
#include "exec/call_frame.h"

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
  for (int64_t r = 0; r < g.rows(); ++r)
    for (int64_t c = 0; c < g.cols(); ++c)
      store_bits(g.dtype, image.data() + g.index(r, c) * size, encode(g.dtype, values[size_t(r * g.cols() + c)]));
  upload(backend, t.buf, image.data());
}

std::vector<double> load(Backend& backend, const Tensor& t) {
  std::vector<std::byte> image(t.buf.bytes);
  backend.download(t.buf, image.data());
  const TensorGeom& g = t.geom;
  const int size = dtype_bytes(g.dtype);
  std::vector<double> out(size_t(g.rows() * g.cols()));
  for (int64_t r = 0; r < g.rows(); ++r)
    for (int64_t c = 0; c < g.cols(); ++c)
      out[size_t(r * g.cols() + c)] = decode(g.dtype, load_bits(g.dtype, image.data() + g.index(r, c) * size));
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

std::string call_candidate(Backend& backend, Runner& runner, const Op& op, const Case& c,
                           std::span<const Tensor> tensors, double timeout_s) {
  std::vector<TensorGeom> geoms;
  std::vector<std::byte*> data;
  for (const Tensor& t : tensors) geoms.push_back(t.geom), data.push_back(t.buf.data);
  std::vector<double> scalars;
  for (auto& s : c.scalars) scalars.push_back(s.value);
  CallFrame frame(backend, c.op, geoms, data, c.num_inputs(), scalars);
  const double timeout = timeout_s > 0 ? timeout_s : op.default_timeout(c, backend.kind());
  RunStatus s = runner.run(frame.call, timeout);
  if (s.end == RunEnd::crashed) return "crash: " + s.failure;
  if (s.end == RunEnd::timed_out) return "hang: " + s.failure;
  if (std::string e = backend.synchronize(); !e.empty()) return "device error: " + e;
  if (!s.failure.empty()) return "kernel error: " + s.failure;
  if (s.code == ASSAY_UNSUPPORTED) return "the kernel refused the case (ASSAY_UNSUPPORTED)";
  if (s.code != ASSAY_OK) return fmt::format("assay_run returned {}", s.code);
  return {};
}

std::optional<Case> fit_shapes(const Op& op, const Case& c, const Spec& spec, std::initializer_list<std::string_view> fixed) {
  Spec shapes_only = spec;
  std::erase_if(shapes_only.requires_, [&](const Requirement& r) {
    return std::any_of(fixed.begin(), fixed.end(), [&](std::string_view n) { return r.text().find(n) != std::string::npos; });
  });
  return op.fit_requires(c, shapes_only);
}

bool within_limits(const Backend& backend, const Op& op, const Case& c) {
  const CaseLimits lim = limits_for(backend);
  return op.work(c) <= lim.max_work && op.case_bytes(c) <= lim.max_bytes;
}

std::pair<double, double> torch_tolerances(DType t) {
  switch (t) {
    case DType::f16: return {1e-3, 1e-5};
    case DType::bf16: return {1.6e-2, 1e-5};
    case DType::f32: return {1.3e-6, 1e-5};
    case DType::f64: return {1e-7, 1e-7};
    default: return {0.0, 0.0};
  }
}

bool torch_close(double a, double b, double rtol, double atol) {
  if (std::isnan(a) || std::isnan(b)) return false;
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= atol + rtol * std::fabs(b);
}

}  // namespace assay::baseline
