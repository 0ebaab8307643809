// PLANTED BUG (field-notes 2.9 uninitialised shared memory): a shared-
// memory tree over 256 slots where only threads that own an element write
// their slot: for rows shorter than 256 the tree adds whatever earlier
// blocks left in the idle slots. Expected verdict:
// nan_mismatch: the worker fills shared memory with NaN before each call
// (docs/isolation.md), so the slots never written read NaN.
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace {

constexpr int kMaxDims = 6;
constexpr int64_t kMaxBlocks = 65535;  // grid.x cap; rows past it: the grid-stride loop

// One N-D DLTensor's strides (elements; NULL: compact row-major), by value into kernels.
struct View {
  char* base;
  int nd;
  int64_t size[kMaxDims], stride[kMaxDims];
};
View view_of(const DLTensor& t) {
  View v;
  v.base = static_cast<char*>(t.data) + t.byte_offset, v.nd = t.ndim;
  int64_t compact = 1;
  for (int d = t.ndim - 1; d >= 0; --d) {
    v.size[d] = t.shape[d], v.stride[d] = t.strides ? t.strides[d] : compact;
    compact *= t.shape[d];
  }
  return v;
}
// Element offset of index r over the first `dims` dimensions (row-major decomposition).
__device__ int64_t offset_of(const View& v, int64_t r, int dims) {
  int64_t off = 0;
  for (int d = dims - 1; d >= 0; --d) {
    off += (r % v.size[d]) * v.stride[d];
    r /= v.size[d];
  }
  return off;
}

// x [..., n] and y [...]: row r of x is element r of y.
struct Rows {
  View x, y;
  int64_t n, step, count;
};
Rows rows_of(const DLTensor& xt, const DLTensor& yt) {
  Rows R;
  R.x = view_of(xt), R.y = view_of(yt);
  R.n = xt.shape[xt.ndim - 1], R.step = R.x.stride[xt.ndim - 1], R.count = 1;
  for (int d = 0; d + 1 < xt.ndim; ++d) R.count *= xt.shape[d];
  return R;
}
template <class T> __device__ const T* row_of(const Rows& R, int64_t r) {
  return reinterpret_cast<const T*>(R.x.base) + offset_of(R.x, r, R.x.nd - 1);
}
template <class T> __device__ T* out_of(const Rows& R, int64_t r) {
  return reinterpret_cast<T*>(R.y.base) + offset_of(R.y, r, R.y.nd);
}

bool is(const DLTensor& t, DLDataType d) {
  return t.dtype.code == d.code && t.dtype.bits == d.bits && t.dtype.lanes == 1;
}
// True when the call is a reduce of x (type `in`, 1..6 dims) into y (type
// `out`, x's leading dimensions).
bool reduce_of(const assay_call* call, DLDataType in, DLDataType out) {
  if (!call->op || std::strcmp(call->op, "reduce") != 0) return false;
  if (call->num_inputs != 1 || call->num_outputs != 1 || call->num_scalars != 0) return false;
  const DLTensor &x = call->inputs[0], &y = call->outputs[0];
  if (!is(x, in) || !is(y, out) || x.ndim < 1 || x.ndim > kMaxDims || y.ndim != x.ndim - 1) return false;
  return std::equal(y.shape, y.shape + y.ndim, x.shape);
}
unsigned grid_for(int64_t rows) { return unsigned(std::min<int64_t>(std::max<int64_t>(rows, 1), kMaxBlocks)); }

constexpr DLDataType kF32{kDLFloat, 32, 1};
constexpr DLDataType kI64{kDLInt, 64, 1};

constexpr int kThreads = 256;

__global__ void sum_tree(Rows R) {
  __shared__ float part[kThreads];
  for (int64_t r = blockIdx.x; r < R.count; r += gridDim.x) {
    const float* x = row_of<float>(R, r);
    if (threadIdx.x < R.n) {  // BUG: idle threads leave their slot as it was
      float s = 0.0f;
      for (int64_t i = threadIdx.x; i < R.n; i += kThreads) s += x[i * R.step];
      part[threadIdx.x] = s;
    }
    __syncthreads();
    for (int o = kThreads / 2; o > 0; o /= 2) {
      if (int(threadIdx.x) < o) part[threadIdx.x] += part[threadIdx.x + o];
      __syncthreads();
    }
    if (threadIdx.x == 0) *out_of<float>(R, r) = part[0];
    __syncthreads();
  }
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (!reduce_of(call, kF32, kF32)) return ASSAY_UNSUPPORTED;
  const Rows R = rows_of(call->inputs[0], call->outputs[0]);
  if (R.count == 0) return ASSAY_OK;
  const auto stream = static_cast<cudaStream_t>(call->stream);
  sum_tree<<<grid_for(R.count), 256, 0, stream>>>(R);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
