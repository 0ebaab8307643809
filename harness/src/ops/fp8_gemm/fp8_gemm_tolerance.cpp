#include "ops/fp8_gemm/fp8_gemm_tolerance.h"

#include <algorithm>
#include <cmath>

#include "exec/patterns.h"

namespace assay::fp8_gemm {
namespace {

constexpr double kU32 = 0x1p-24;  // f32's unit roundoff
// The FP8 tensor core's accumulator keeps about 14 significant bits
// (DeepSeek-V3 report, 3.3.2) and may truncate: one ulp of 14 bits.
constexpr double kUTensorCore = 0x1p-13;

}  // namespace

double gamma(double n, double u) { return n * u / (1.0 - n * u); }

double accumulation_error(const Settings& s, int64_t k) {
  // FP8 products are exact in f32 (4 x 4 significant bits). f32: k - 1
  // additions, the scales' product and its multiplication (or the two
  // dequantizations and the product): γ_{k+3}. Tensor core: each run of
  // promote_every products summed in ~14 bits (γ_pe at 2^-13), the runs
  // then summed in f32 with their scales (γ_{runs+3}).
  if (s.accumulate == Accumulate::f32) return gamma(double(k) + 3, kU32);
  const double run = double(std::min(k, s.promote_every));
  const double runs = double((k + s.promote_every - 1) / s.promote_every);
  return gamma(run, kUTensorCore) + gamma(runs + 3, kU32);
}

ErrorModel error_model(const Settings& s, int64_t k, Subnormals subnormals) {
  ErrorModel e;
  e.rel = accumulation_error(s, k);
  // Half of f32's subnormal spacing per underflow, doubled for the second
  // order terms; a kernel that flushes loses up to f32's smallest normal.
  e.floor_unit = subnormals == Subnormals::flush ? 0x1p-125 : 0x1p-149;
  return e;
}

Tolerance tolerance(const Case& c, const ErrorModel& e, double scale) {
  Tolerance t;
  t.out = c.tensors[D].dtype;
  t.u_eff = 1.0;  // bound is the error itself (fp8_gemm_reference.h)
  t.scale = scale;
  t.poisoned = true;  // d is a pure output
  t.poison = poison_bits(t.out);
  // Where |A'||B'| nears f32's range, partial sums may overflow the
  // accumulator though the exact result is finite.
  t.nonfinite_above = e.rel * 0x1p127;
  return t;
}

}  // namespace assay::fp8_gemm
