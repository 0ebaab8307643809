// PLANTED BUG (field-notes 2.6, 2.7): tanh as (e^2x - 1) / (e^2x + 1). For
// small |x| the subtraction e^2x - 1 cancels (at x = 1e-3 a few hundred ulps
// off), and past x = 44.4 both exps overflow and inf / inf gives NaN where
// tanh is 1. The sweep's first failing case is a small |x| one.
// Expected verdict: mismatch.

#include <assay/abi.h>
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

namespace {

constexpr int kMaxDims = 6;
constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

// An N-D DLTensor as the device walks it: flat index i decomposed row-major
// into coordinates, each times its stride (elements). Passed by value.
struct Walk {
  char* base;  // data + byte_offset
  int ndim;
  int64_t shape[kMaxDims], stride[kMaxDims];
  int64_t count;
  __device__ int64_t at(int64_t i) const {
    int64_t off = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      off += (i % shape[d]) * stride[d];
      i /= shape[d];
    }
    return off;
  }
};
Walk walk_of(const DLTensor& t) {
  Walk w{};
  w.base = static_cast<char*>(t.data) + t.byte_offset;
  w.ndim = t.ndim, w.count = 1;
  int64_t compact = 1;  // strides == NULL: compact row-major
  for (int d = t.ndim - 1; d >= 0; --d) {
    w.shape[d] = t.shape[d], w.stride[d] = t.strides ? t.strides[d] : compact;
    compact *= t.shape[d], w.count *= t.shape[d];
  }
  return w;
}

bool is(const DLTensor& t, DLDataType d) {
  return t.ndim >= 1 && t.ndim <= kMaxDims && t.dtype.code == d.code && t.dtype.bits == d.bits && t.dtype.lanes == 1;
}
// True when the call is op "unary" with x of type `in` and y of type `out`, same shape.
bool unary_call(const assay_call* call, DLDataType in, DLDataType out) {
  if (!call->op || std::strcmp(call->op, "unary") != 0) return false;
  if (call->num_inputs != 1 || call->num_outputs != 1 || call->num_scalars != 0) return false;
  const DLTensor &x = call->inputs[0], &y = call->outputs[0];
  if (!is(x, in) || !is(y, out) || x.ndim != y.ndim) return false;
  for (int d = 0; d < x.ndim; ++d)
    if (x.shape[d] != y.shape[d]) return false;
  return true;
}

constexpr DLDataType kF32{kDLFloat, 32, 1};

// Blocks for `count` elements, one thread each, capped: a grid-stride loop does the rest.
unsigned grid_for(int64_t count) {
  const int64_t want = (count + kThreads - 1) / kThreads;
  return unsigned(want < kMaxBlocks ? want : kMaxBlocks);
}

// The strided element-wise kernel: any strides, a grid-stride loop over all elements.
template <class F>
__global__ void strided_f32(Walk X, Walk Y, F f) {
  const float* x = reinterpret_cast<const float*>(X.base);
  float* y = reinterpret_cast<float*>(Y.base);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < X.count; i += int64_t(gridDim.x) * blockDim.x)
    y[Y.at(i)] = f(x[X.at(i)]);
}
// Launches f over f32 x -> y on the call's stream; never synchronizes.
template <class F>
int run_f32(const assay_call* call, F f) {
  if (!unary_call(call, kF32, kF32)) return ASSAY_UNSUPPORTED;
  const Walk X = walk_of(call->inputs[0]), Y = walk_of(call->outputs[0]);
  if (X.count == 0) return ASSAY_OK;
  strided_f32<<<grid_for(X.count), kThreads, 0, static_cast<cudaStream_t>(call->stream)>>>(X, Y, f);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}

}  // namespace

struct Fn {
  __device__ float operator()(float v) const {
    const float e = expf(2.0f * v);
    return (e - 1.0f) / (e + 1.0f);  // BUG: inf / inf for large x
  }
};

extern "C" int assay_run(const assay_call* call) { return run_f32(call, Fn{}); }
