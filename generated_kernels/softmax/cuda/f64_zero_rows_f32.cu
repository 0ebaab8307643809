// Correct cuda kernel under its declared contract: f32 in and out, one
// thread per row (grid-stride over rows, so any number of rows), f64
// arithmetic (CUDA's double exp, within 1 ulp, and IEEE double division),
// one rounding to f32 at the end; `empty_rows: zero`: a row that is entirely
// -inf (fully masked) gives 0 instead of NaN. The max propagates NaN, so a
// row of NaN and -inf still gives NaN; +inf still gives NaN.
// Expected verdict: pass.
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

__global__ void softmax_row_per_thread(Rows X, Rows Y, int64_t rows) {
  const int64_t n = X.n;
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows; r += int64_t(gridDim.x) * blockDim.x) {
    const float* x = reinterpret_cast<const float*>(X.base) + X.row_offset(r);
    float* y = reinterpret_cast<float*>(Y.base) + Y.row_offset(r);
    double m = -INFINITY;
    for (int64_t i = 0; i < n; ++i) {
      const double v = x[i * X.step];
      m = (v > m || v != v) ? v : m;  // NaN-propagating
    }
    if (m == -INFINITY) {  // an empty (fully masked) row
      for (int64_t i = 0; i < n; ++i) y[i * Y.step] = 0.0f;
      continue;
    }
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += exp(double(x[i * X.step]) - m);
    for (int64_t i = 0; i < n; ++i) y[i * Y.step] = float(exp(double(x[i * X.step]) - m) / s);
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
  const unsigned grid = unsigned(std::min<int64_t>((rows + kThreads - 1) / kThreads, 65535));
  softmax_row_per_thread<<<grid, kThreads, 0, stream>>>(X, Y, rows);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
