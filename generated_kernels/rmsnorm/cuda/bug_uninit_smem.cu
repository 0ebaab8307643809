// PLANTED BUG (field-notes 2.9): a tree sum over 256 shared slots written
// only by threads t < n.
// Expected verdict: nan_mismatch: the worker fills shared memory with NaN before each call
// (docs/isolation.md), so the slots never written read NaN.
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

namespace {

constexpr int kMaxDims = 6;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int64_t kMaxBlocks = 65535;  // rows past it: the grid-stride loop

// A tensor seen as rows: for x and y the last dimension is the row and every
// combination of the leading indices one row; for a per-row tensor (mean,
// rstd) every element is one row; weight and bias are one row. Row r is
// decomposed row-major into the leading coordinates. Strides in elements,
// 0 included (a broadcast weight). Passed to kernels by value.
struct View {
  char* base;
  int lead;
  int64_t size[kMaxDims], stride[kMaxDims];
  int64_t n, step, count;  // row length, its stride, number of rows
  template <class T>
  __device__ T* row(int64_t r) const {
    int64_t off = 0;
    for (int d = lead - 1; d >= 0; --d) {
      off += (r % size[d]) * stride[d];
      r /= size[d];
    }
    return reinterpret_cast<T*>(base) + off;
  }
};
View view_of(const DLTensor& t, bool per_row) {
  View v{};
  v.base = static_cast<char*>(t.data) + t.byte_offset;
  v.lead = per_row ? t.ndim : t.ndim - 1;
  v.n = 1, v.step = 0, v.count = 1;
  for (int d = 0; d < v.lead; ++d) v.size[d] = t.shape[d], v.stride[d] = t.strides[d], v.count *= t.shape[d];
  if (!per_row) v.n = t.shape[t.ndim - 1], v.step = t.strides[t.ndim - 1];
  return v;
}

bool is_float(const DLTensor& t, int bits) { return t.dtype.code == kDLFloat && t.dtype.bits == bits && t.dtype.lanes == 1; }
// The call is `op` with the contract's tensors (docs/ops/layernorm.md,
// rmsnorm.md): x, weight[, bias] and y of `bits`-bit floats, mean and rstd
// f32, shapes as the contract says.
bool norm_call(const assay_call* c, const char* op, int bits) {
  if (!c->op || std::strcmp(c->op, op) != 0) return false;
  const bool ln = std::strcmp(op, "layernorm") == 0;
  if (c->num_inputs != (ln ? 3 : 2) || c->num_outputs != (ln ? 3 : 1) || c->num_scalars != 1) return false;
  const DLTensor &x = c->inputs[0], &y = c->outputs[0];
  if (x.ndim < 1 || x.ndim > kMaxDims || y.ndim != x.ndim || !is_float(x, bits) || !is_float(y, bits)) return false;
  for (int d = 0; d < x.ndim; ++d)
    if (x.shape[d] != y.shape[d]) return false;
  for (int i = 1; i < c->num_inputs; ++i) {
    const DLTensor& v = c->inputs[i];
    if (v.ndim != 1 || v.shape[0] != x.shape[x.ndim - 1] || !is_float(v, bits)) return false;
  }
  for (int i = 1; i < c->num_outputs; ++i) {
    const DLTensor& s = c->outputs[i];
    if (s.ndim != x.ndim - 1 || !is_float(s, 32)) return false;
    for (int d = 0; d < s.ndim; ++d)
      if (s.shape[d] != x.shape[d]) return false;
  }
  return true;
}

[[maybe_unused]] unsigned grid_for(int64_t rows, int rows_per_block) {
  const int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
  return unsigned(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

[[maybe_unused]] __device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// Block-wide sum, the result in every thread: warp shuffles, one partial per
// warp in `scratch`, the first warp's shuffles; the barrier after the read
// lets the next reduction reuse scratch.
[[maybe_unused]] __device__ float block_sum(float v, float* scratch) {
  v = warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < kWarps ? scratch[lane] : 0.0f;
  v = warp_sum(v);
  __syncthreads();
  return v;
}

__global__ void rmsnorm_kernel(View X, View W, View Y, float eps) {
  __shared__ float scratch[kThreads];
  const float* w = W.row<const float>(0);
  const int64_t n = X.n;
  for (int64_t r = blockIdx.x; r < X.count; r += gridDim.x) {
    const float* x = X.row<const float>(r);
    float* y = Y.row<float>(r);
    float q = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += kThreads) q += x[i * X.step] * x[i * X.step];
    if (threadIdx.x < n) scratch[threadIdx.x] = q;  // BUG: idle slots never written
    __syncthreads();
    for (int step = kThreads / 2; step > 0; step /= 2) {
      if (int(threadIdx.x) < step) scratch[threadIdx.x] += scratch[threadIdx.x + step];
      __syncthreads();
    }
    q = scratch[0];
    __syncthreads();
    const float rstd = 1.0f / sqrtf(q / float(n) + eps);
    for (int64_t i = threadIdx.x; i < n; i += kThreads) y[i * Y.step] = x[i * X.step] * rstd * w[i * W.step];
  }
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (!norm_call(call, "rmsnorm", 32)) return ASSAY_UNSUPPORTED;
  const View X = view_of(call->inputs[0], false), W = view_of(call->inputs[1], false), Y = view_of(call->outputs[0], false);
  if (X.count == 0) return ASSAY_OK;
  rmsnorm_kernel<<<grid_for(X.count, 1), kThreads, 0, static_cast<cudaStream_t>(call->stream)>>>(X, W, Y, float(call->scalars[0]));
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
