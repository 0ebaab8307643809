// Correct cuda kernel: one warp per row, f32. Blocks of 8 warps, rows by a
// grid-stride loop over all warps of the grid (gridDim.x capped at 65535),
// so any number of rows works. Each lane walks the row in chunks of 32 with
// the tail masked (any n), keeping its own max and sum of expf(x - max);
// shuffle butterflies (__shfl_xor_sync) combine the 32 lanes, no shared
// memory and no barriers. Then expf(x - max) / sum.
// Numerically: 32 interleaved partial sums combined pairwise (the host twin
// is host/chunked_f32.cpp).
// Expected verdict: pass.
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace {

constexpr int kMaxDims = 6;

// The rows of an N-D DLTensor: the last dimension is the row, every
// combination of the leading indices is one row. Strides in elements.
struct Rows {
  char* base;                      // data + byte_offset
  int lead;                        // number of leading dimensions, ndim - 1
  int64_t size[kMaxDims - 1];      // leading sizes
  int64_t stride[kMaxDims - 1];    // leading strides
  int64_t n, step;                 // row length and the last dimension's stride
  // Element offset of row r's first element: r decomposed row-major into
  // the leading coordinates.
  __device__ int64_t row_offset(int64_t r) const {
    int64_t off = 0;
    for (int d = lead - 1; d >= 0; --d) {
      off += (r % size[d]) * stride[d];
      r /= size[d];
    }
    return off;
  }
};
Rows rows_of(const DLTensor& t) {
  Rows v{};
  v.base = static_cast<char*>(t.data) + t.byte_offset;
  v.lead = t.ndim - 1;
  int64_t compact = 1;  // strides == NULL: compact row-major
  for (int d = t.ndim - 1; d >= 0; --d) {
    const int64_t s = t.strides ? t.strides[d] : compact;
    compact *= t.shape[d];
    if (d == t.ndim - 1) v.n = t.shape[d], v.step = s;
    else v.size[d] = t.shape[d], v.stride[d] = s;
  }
  return v;
}
int64_t row_count(const DLTensor& t) {
  int64_t r = 1;
  for (int d = 0; d + 1 < t.ndim; ++d) r *= t.shape[d];
  return r;
}

bool is(const DLTensor& t, DLDataType d) {
  return t.ndim >= 1 && t.ndim <= kMaxDims && t.dtype.code == d.code && t.dtype.bits == d.bits && t.dtype.lanes == 1;
}
// True when the call is `op` with x of type `in` and y of type `out`, same shape.
bool softmax_of(const assay_call* call, const char* op, DLDataType in, DLDataType out) {
  if (!call->op || std::strcmp(call->op, op) != 0) return false;
  if (call->num_inputs != 1 || call->num_outputs != 1 || call->num_scalars != 0) return false;
  const DLTensor &x = call->inputs[0], &y = call->outputs[0];
  if (!is(x, in) || !is(y, out) || x.ndim != y.ndim) return false;
  return std::equal(x.shape, x.shape + x.ndim, y.shape);
}

constexpr int kWarps = 8;  // warps (rows) per block

__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void softmax_warp(Rows X, Rows Y, int64_t rows) {
  const int lane = threadIdx.x % 32;
  const int64_t n = X.n, warps = int64_t(gridDim.x) * kWarps;
  for (int64_t r = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32; r < rows; r += warps) {  // uniform per warp
    const float* x = reinterpret_cast<const float*>(X.base) + X.row_offset(r);
    float* y = reinterpret_cast<float*>(Y.base) + Y.row_offset(r);
    float m = -INFINITY;
    for (int64_t base = 0; base < n; base += 32) {  // the row in chunks of 32, the tail masked
      const int64_t i = base + lane;
      if (i < n) m = fmaxf(m, x[i * X.step]);
    }
    m = warp_max(m);
    float s = 0.0f;
    for (int64_t base = 0; base < n; base += 32) {
      const int64_t i = base + lane;
      if (i < n) s += expf(x[i * X.step] - m);
    }
    s = warp_sum(s);
    for (int64_t base = 0; base < n; base += 32) {
      const int64_t i = base + lane;
      if (i < n) y[i * Y.step] = expf(x[i * X.step] - m) / s;
    }
  }
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!softmax_of(call, "softmax", f32, f32)) return ASSAY_UNSUPPORTED;
  const Rows X = rows_of(call->inputs[0]), Y = rows_of(call->outputs[0]);
  const int64_t rows = row_count(call->inputs[0]);
  if (rows == 0 || X.n == 0) return ASSAY_OK;
  const auto stream = static_cast<cudaStream_t>(call->stream);
  const unsigned grid = unsigned(std::min<int64_t>((rows + kWarps - 1) / kWarps, 65535));  // one warp per row
  softmax_warp<<<grid, kWarps * 32, 0, stream>>>(X, Y, rows);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
