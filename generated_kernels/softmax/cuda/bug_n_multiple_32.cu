// PLANTED BUG (field-notes 2b softmax: warp reduction assuming n % 32 == 0;
// 2.1 tail bugs): the one-warp-per-row kernel of warp_f32.cu, but its loops
// run over whole chunks of 32 only (base + 32 <= n), for the max, the sum
// and the stores alike. The last n % 32 elements are neither reduced nor
// written, and a row shorter than 32 is not touched at all.
// Why not mismatch: the skipped elements are never stored, so they still
// hold the NaN poison the harness painted before the call, and the judge
// reports poison left in the output as unwritten_output before it compares
// values (every case with n % 32 != 0 fails this way on its first call).
// Rows with n % 32 == 0 are right.
// Expected verdict: unwritten_output.
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

__global__ void softmax_warp_whole_chunks(Rows X, Rows Y, int64_t rows) {
  const int lane = threadIdx.x % 32;
  const int64_t n = X.n, warps = int64_t(gridDim.x) * kWarps;
  for (int64_t r = blockIdx.x * int64_t(kWarps) + threadIdx.x / 32; r < rows; r += warps) {  // uniform per warp
    const float* x = reinterpret_cast<const float*>(X.base) + X.row_offset(r);
    float* y = reinterpret_cast<float*>(Y.base) + Y.row_offset(r);
    float m = -INFINITY;
    for (int64_t base = 0; base + 32 <= n; base += 32) m = fmaxf(m, x[(base + lane) * X.step]);  // BUG: tail dropped
    m = warp_max(m);
    float s = 0.0f;
    for (int64_t base = 0; base + 32 <= n; base += 32) s += expf(x[(base + lane) * X.step] - m);
    s = warp_sum(s);
    for (int64_t base = 0; base + 32 <= n; base += 32)
      y[(base + lane) * Y.step] = expf(x[(base + lane) * X.step] - m) / s;
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
  softmax_warp_whole_chunks<<<grid, kWarps * 32, 0, stream>>>(X, Y, rows);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
