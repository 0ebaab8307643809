// What the three baselines share: a caching pool standing in for PyTorch's
// allocator, host-side value draws, the candidate call and the reference.
// Unlike the gate there are no guards, canaries or poison here: the point is
// to do what the published checkers do, and no more.
#pragma once
#include <chrono>
#include <map>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "baseline/baseline.h"
#include "case/case.h"
#include "exec/runner.h"
#include "ops/op.h"
#include "spec/spec.h"

namespace assay::baseline {

// PyTorch's CUDA caching allocator in miniature: a freed block stays cached
// with its contents, and the next request of the same (512-byte rounded) size
// gets it back as it was, so a do-nothing kernel can inherit an old answer.
// Each block has 512 bytes of room after it, as a block inside an allocator
// segment has neighbours: an off-by-one store lands there instead of faulting.
class CachingPool {
 public:
  explicit CachingPool(Backend& backend) : backend_(backend) {}
  ~CachingPool();
  CachingPool(const CachingPool&) = delete;
  CachingPool& operator=(const CachingPool&) = delete;
  Buffer get(size_t bytes);
  void put(Buffer b);  // back to the cache, contents kept

 private:
  Backend& backend_;
  std::multimap<size_t, Buffer> free_;  // by rounded size; the latest freed first
  std::vector<Buffer> owned_;
};

// One operand: a buffer and where its elements sit in it.
struct Tensor {
  Buffer buf;
  TensorGeom geom;
};
size_t bytes_for(const TensorGeom& g);  // the span in bytes, at least 1

// `values` (rows x cols, row-major) rounded to the tensor's dtype and written
// at its element positions; other bytes of the buffer are left as they were.
void store(Backend& backend, const Tensor& t, const std::vector<double>& values);
// The tensor's elements, row-major, decoded to double.
std::vector<double> load(Backend& backend, const Tensor& t);
// Host bytes into a backend buffer (whole buffer); cuda through its stream.
void upload(Backend& backend, Buffer b, const std::byte* host);

// Host-side draws from the counter RNG, row-major: uniform [0,1) (torch.rand)
// and standard normal (torch.randn, Box-Muller).
// The published rules' comparisons, shared by every op's baselines:
// torch.testing.assert_close's default (rtol, atol) per dtype
// (torch.testing._comparison._DTYPE_PRECISIONS; integers compare exactly)...
std::pair<double, double> torch_tolerances(DType t);
// ...and torch.isclose(a, b, rtol, atol), which allclose and assert_close
// apply element by element: |a - b| <= atol + rtol * |b|; NaN is never close
// (equal_nan=False, the default); infinities are close only to themselves.
bool torch_close(double a, double b, double rtol, double atol);

std::vector<double> draw_uniform(uint64_t seed, uint32_t stream, int64_t count);
std::vector<double> draw_normal(uint64_t seed, uint32_t stream, int64_t count);

// Calls the candidate once on `tensors` (the case's, in order); "" when it
// returned ASSAY_OK, else what happened (crash, hang, device error,
// exception, refusal, error code): under every published rule an exception
// or a dead process fails the check.
std::string call_candidate(Backend& backend, Runner& runner, const Op& op, const Case& c,
                           std::span<const Tensor> tensors, double timeout_s);
// The case moved inside the spec's requires (the op's fit_requires), with
// requirements naming any of `fixed` (scalars each rule fixes) left out.
std::optional<Case> fit_shapes(const Op& op, const Case& c, const Spec& spec,
                               std::initializer_list<std::string_view> fixed);
// Whether the backend takes a case this size (gate's limits_for).
bool within_limits(const Backend& backend, const Op& op, const Case& c);

class Stopwatch {
 public:
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }

 private:
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace assay::baseline
