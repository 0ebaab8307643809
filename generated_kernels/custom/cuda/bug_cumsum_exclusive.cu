// PLANTED BUG (off by one element, exclusive scan): the block scan of
// cumsum.cu, but each thread stores its left neighbour's prefix (thread 0 the
// carry alone): the exclusive prefix sum y[r][j] = x[r][0] + ... + x[r][j-1],
// where the op is the inclusive one. Every element is off by its own x.
// Expected verdict: mismatch (a `specials` case, where y[r][j] lacks the Inf or
// NaN at x[r][j], would read nan_mismatch; the gate's first cases use finite
// recipes).
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace {

// A 2-D DLTensor in device memory: element (r, c) lives at base + (r*rs + c*cs) elements.
struct Mat {
  char* base;
  int64_t rows, cols, rs, cs;
  __device__ float& at(int64_t r, int64_t c) const { return reinterpret_cast<float*>(base)[r * rs + c * cs]; }
};
Mat view(const DLTensor& t) {
  return {static_cast<char*>(t.data) + t.byte_offset, t.shape[0], t.shape[1], t.strides ? t.strides[0] : t.shape[1],
          t.strides ? t.strides[1] : 1};
}

bool is_f32(const DLTensor& t) {
  return t.ndim == 2 && t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1;
}
// True when the call is cumsum in f32: inputs {x [rows, n]}, outputs {y [rows, n]}.
bool cumsum_of(const assay_call* call) {
  if (std::strcmp(call->op, "custom") != 0 || call->num_inputs != 1 || call->num_outputs != 1 ||
      call->num_scalars != 0)
    return false;
  const DLTensor &x = call->inputs[0], &y = call->outputs[0];
  return is_f32(x) && is_f32(y) && y.shape[0] == x.shape[0] && y.shape[1] == x.shape[1];
}

constexpr int kChunk = 256, kWarps = kChunk / 32;

// Inclusive scan of v across the 32 lanes of a warp (Hillis-Steele with shuffles).
__device__ float warp_scan(float v, int lane) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const float t = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += t;
  }
  return v;
}

// Inclusive scan of one chunk of 256 values, one per thread: returns the
// thread's prefix within the chunk; total gets the chunk's sum (all threads).
__device__ float block_scan(float v, float& total) {
  __shared__ float warp_sums[kWarps];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_scan(v, lane);
  if (lane == 31) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float s = lane < kWarps ? warp_sums[lane] : 0.0f;
    s = warp_scan(s, lane);
    if (lane < kWarps) warp_sums[lane] = s;
  }
  __syncthreads();
  if (warp > 0) v += warp_sums[warp - 1];
  total = warp_sums[kWarps - 1];
  __syncthreads();  // warp_sums is reused by the next chunk
  return v;
}

__global__ void cumsum_rows(Mat x, Mat y) {
  for (int64_t r = blockIdx.x; r < y.rows; r += gridDim.x) {
    float carry = 0.0f;  // sum of the row's earlier chunks
    for (int64_t c0 = 0; c0 < y.cols; c0 += kChunk) {
      const int64_t j = c0 + threadIdx.x;
      float total;
      const float local = block_scan(j < y.cols ? x.at(r, j) : 0.0f, total);
      __shared__ float prefix[kChunk];
      prefix[threadIdx.x] = local;
      __syncthreads();
      // BUG: the left neighbour's inclusive prefix, i.e. an exclusive scan
      if (j < y.cols) y.at(r, j) = threadIdx.x > 0 ? carry + prefix[threadIdx.x - 1] : carry;
      __syncthreads();  // prefix is reused by the next chunk
      carry += total;
    }
  }
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (!cumsum_of(call)) return ASSAY_UNSUPPORTED;
  const Mat x = view(call->inputs[0]), y = view(call->outputs[0]);
  const auto stream = static_cast<cudaStream_t>(call->stream);
  if (y.rows == 0 || y.cols == 0) return ASSAY_OK;
  const unsigned grid = unsigned(std::min<int64_t>(y.rows, 65535));
  cumsum_rows<<<grid, kChunk, 0, stream>>>(x, y);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
