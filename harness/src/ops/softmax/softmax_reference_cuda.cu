#include "ops/softmax/softmax_reference_cuda.h"

#include <cuda_runtime.h>

#include <fmt/format.h>

#include "backend/cuda/reference_scratch.h"
#include "core/error.h"

namespace assay::softmax {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 65535;  // rows past it: the grid-stride loop

void check(cudaError_t err, const char* what) { cuda_reference::check(err, "softmax reference", what); }

// A block-wide reduction of T with merge(); every thread gets the result.
template <class T>
__device__ T block_reduce(T v, T* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int step = kThreads / 2; step > 0; step /= 2) {
    if (int(threadIdx.x) < step) merge(shared[threadIdx.x], shared[threadIdx.x + step]);
    __syncthreads();
  }
  T out = shared[0];
  __syncthreads();  // shared is reused by the next reduction
  return out;
}

__global__ void reference_kernel(const std::byte* x, const __grid_constant__ TensorGeom g, const __grid_constant__ ErrorModel e, int64_t row0, int64_t rows,
                                 double* ref, double* bound) {
  __shared__ RowMax max_part[kThreads];
  __shared__ RowSum sum_part[kThreads];
  const int64_t n = g.cols();
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t row = row0 + r;
    RowMax mx;
    for (int64_t c = threadIdx.x; c < n; c += kThreads)
      add(mx, decode(g.dtype, load_bits(g.dtype, x + g.index(row, c) * size)));
    mx = block_reduce(mx, max_part);
    RowSum sum;
    if (!mx.nan && mx.m > -INFINITY && mx.m < INFINITY)
      for (int64_t c = threadIdx.x; c < n; c += kThreads)
        add(sum, e, decode(g.dtype, load_bits(g.dtype, x + g.index(row, c) * size)), mx.m);
    sum = block_reduce(sum, sum_part);
    const RowStats st = finish(e, mx, sum);
    for (int64_t c = threadIdx.x; c < n; c += kThreads)
      element(e, st, decode(g.dtype, load_bits(g.dtype, x + g.index(row, c) * size)), ref + r * n + c,
              bound + r * n + c);
  }
}

}  // namespace

void reference_cuda(void* stream_ptr, const std::byte* x, const TensorGeom& g, const ErrorModel& e, int64_t row0,
                    int64_t rows, double* ref, double* bound) {
  auto stream = cudaStream_t(stream_ptr);
  const int64_t count = rows * g.cols();
  if (count == 0) return;
  const unsigned blocks = unsigned(rows < int64_t(kMaxBlocks) ? rows : int64_t(kMaxBlocks));
  reference_kernel<<<blocks, kThreads, 0, stream>>>(x, g, e, row0, rows, ref, bound);
  check(cudaGetLastError(), "launch");
}

}  // namespace assay::softmax
