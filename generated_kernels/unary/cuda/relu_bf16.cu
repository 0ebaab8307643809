// Correct cuda kernel: relu on bf16 by bits: negative values and -0 give +0,
// NaN stays NaN, positive values copied exactly (relu is judged bit for bit).
// Expected verdict: pass.

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

constexpr DLDataType kBF16{kDLBfloat, 16, 1};

// Blocks for `count` elements, one thread each, capped: a grid-stride loop does the rest.
unsigned grid_for(int64_t count) {
  const int64_t want = (count + kThreads - 1) / kThreads;
  return unsigned(want < kMaxBlocks ? want : kMaxBlocks);
}

}  // namespace

__global__ void relu_bits(Walk X, Walk Y) {
  const uint16_t* x = reinterpret_cast<const uint16_t*>(X.base);
  uint16_t* y = reinterpret_cast<uint16_t*>(Y.base);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < X.count; i += int64_t(gridDim.x) * blockDim.x) {
    const uint16_t h = x[X.at(i)];
    const bool nan = (h & 0x7f80u) == 0x7f80u && (h & 0x7fu);
    y[Y.at(i)] = nan || !(h & 0x8000u) ? h : uint16_t(0);
  }
}

extern "C" int assay_run(const assay_call* call) {
  if (!unary_call(call, kBF16, kBF16)) return ASSAY_UNSUPPORTED;
  const Walk X = walk_of(call->inputs[0]), Y = walk_of(call->outputs[0]);
  if (X.count == 0) return ASSAY_OK;
  relu_bits<<<grid_for(X.count), kThreads, 0, static_cast<cudaStream_t>(call->stream)>>>(X, Y);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
