// PLANTED BUG (field-notes 2b softmax: online softmax NaN on short rows):
// one warp per row, online softmax. Every lane starts at running max -inf
// and sum 0 and folds in its elements; the lanes' states are merged by a
// shuffle butterfly (lane ^ 16, 8, 4, 2, 1), and neither the merge nor the
// per-element step guards two maxima that are both -inf: the merge then
// computes s_a * expf(-inf - -inf) = 0 * NaN = NaN. On a row of at most 16
// elements idle lanes meet idle lanes, their NaN reaches every lane, and the
// whole row is NaN; a lane whose first element is -inf also turns NaN. Rows
// of 17 or more finite elements are right.
// Expected verdict: nan_mismatch.
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

// A running state of the online softmax: the maximum seen and the sum of
// exp(x - m) over what was seen.
struct State {
  float m, s;
};
// Combines two states, rescaling each sum to the common maximum.
// BUG: no guard for m == -inf, where expf(-inf - -inf) = NaN.
__device__ State merge(State a, State b) {
  const float m = fmaxf(a.m, b.m);
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

__global__ void softmax_online_warp(Rows X, Rows Y, int64_t rows) {
  const int lane = threadIdx.x % 32;
  const int64_t n = X.n, warps = int64_t(gridDim.x) * kWarps;
  for (int64_t r = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32; r < rows; r += warps) {  // uniform per warp
    const float* x = reinterpret_cast<const float*>(X.base) + X.row_offset(r);
    float* y = reinterpret_cast<float*>(Y.base) + Y.row_offset(r);
    State t{-INFINITY, 0.0f};  // idle lanes keep this state
    for (int64_t i = lane; i < n; i += 32) t = merge(t, State{x[i * X.step], 1.0f});
    for (int o = 16; o > 0; o /= 2)
      t = merge(t, State{__shfl_xor_sync(0xffffffffu, t.m, o), __shfl_xor_sync(0xffffffffu, t.s, o)});
    for (int64_t i = lane; i < n; i += 32) y[i * Y.step] = expf(x[i * X.step] - t.m) / t.s;
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
  softmax_online_warp<<<grid, kWarps * 32, 0, stream>>>(X, Y, rows);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
