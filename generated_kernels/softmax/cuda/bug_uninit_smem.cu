// PLANTED BUG (field-notes 2.9 uninitialized memory): block softmax with
// classic shared-memory tree reductions over one 256-slot array. The max
// phase is right: every thread writes its partial (-inf when it had no
// element). The sum phase lets only threads that own an element
// (tid < n) write their partial, yet the tree still adds all 256 slots. The
// slots of idle threads were not written by this reduction: they hold what
// the max phase left there, -inf, so for any row shorter than the block
// (n < 256) the sum is -inf and every output is expf(x - max) / -inf = -0.
// Rows of 256 or more elements are right. (The left-over value is fixed by
// the kernel itself, so the failure does not depend on what shared memory
// held before the launch.)
// Expected verdict: mismatch (-0 where a positive probability is expected;
// rows holding NaN or +inf still come out NaN, as they should).
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace {

constexpr int kMaxDims = 6;
constexpr int kThreads = 256;

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

__global__ void softmax_smem_tree(Rows X, Rows Y, int64_t rows) {
  __shared__ float red[kThreads];
  const int tid = threadIdx.x;
  const int64_t n = X.n;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {  // uniform per block: the barriers are safe
    const float* x = reinterpret_cast<const float*>(X.base) + X.row_offset(r);
    float* y = reinterpret_cast<float*>(Y.base) + Y.row_offset(r);
    float m = -INFINITY;
    for (int64_t i = tid; i < n; i += blockDim.x) m = fmaxf(m, x[i * X.step]);
    red[tid] = m;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if (tid < w) red[tid] = fmaxf(red[tid], red[tid + w]);
      __syncthreads();
    }
    m = red[0];
    __syncthreads();
    float s = 0.0f;
    for (int64_t i = tid; i < n; i += blockDim.x) s += expf(x[i * X.step] - m);
    if (tid < n) red[tid] = s;  // BUG: idle threads leave their slot as it was
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
      if (tid < w) red[tid] += red[tid + w];  // reads the slots of idle threads too
      __syncthreads();
    }
    s = red[0];
    __syncthreads();
    for (int64_t i = tid; i < n; i += blockDim.x) y[i * Y.step] = expf(x[i * X.step] - m) / s;
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
  const unsigned grid = unsigned(std::min<int64_t>(rows, 65535));  // one block per row, grid-stride beyond
  softmax_smem_tree<<<grid, kThreads, 0, stream>>>(X, Y, rows);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
