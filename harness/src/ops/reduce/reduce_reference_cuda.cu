#include "ops/reduce/reduce_reference_cuda.h"

#include <cuda_runtime.h>

#include <memory>

#include <fmt/format.h>

#include "backend/cuda/reference_scratch.h"
#include "core/error.h"

namespace assay::reduce {
namespace {

constexpr int kThreads = 128;
constexpr unsigned kMaxBlocks = 65535;  // rows past it: the grid-stride loop

void check(cudaError_t err, const char* what) { cuda_reference::check(err, "reduce reference", what); }

using cuda_reference::DeviceArray;

// One block per row: each thread adds a strided share of the row, then a
// shared-memory tree merges the partial states (merge keeps the lowest
// index of an extreme and of the first NaN, so the split does not matter).
__global__ void reference_kernel(const std::byte* x, const __grid_constant__ TensorGeom g, const __grid_constant__ ErrorModel e, int64_t row0, int64_t rows,
                                 const double* got, double* ref, double* bound) {
  __shared__ RowAcc part[kThreads];
  const int64_t n = g.cols();
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t row = row0 + r;
    RowAcc acc;
    for (int64_t c = threadIdx.x; c < n; c += kThreads)
      add(acc, decode(g.dtype, load_bits(g.dtype, x + g.index(row, c) * size)), c);
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int step = kThreads / 2; step > 0; step /= 2) {
      if (int(threadIdx.x) < step) merge(part[threadIdx.x], part[threadIdx.x + step]);
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      finish(e, part[0], n, ref + r, bound + r);
      if (got && e.ties_any && is_arg(e.op)) {
        const double k = got[r];
        if (k >= 0 && k < double(n) && k == floor(k) &&
            tie_accepts(e, part[0], n, k, decode(g.dtype, load_bits(g.dtype, x + g.index(row, int64_t(k)) * size))))
          ref[r] = k;
      }
    }
    __syncthreads();  // part is reused by the next row
  }
}

}  // namespace

void reference_cuda(void* stream_ptr, const std::byte* x, const TensorGeom& g, const ErrorModel& e, int64_t row0,
                    int64_t rows, const double* got, double* ref, double* bound) {
  auto stream = cudaStream_t(stream_ptr);
  if (rows == 0) return;
  DeviceArray d_ref(size_t(rows), stream), d_bound(size_t(rows), stream);
  const size_t bytes = size_t(rows) * sizeof(double);
  std::unique_ptr<DeviceArray> d_got;
  if (got) {
    d_got = std::make_unique<DeviceArray>(size_t(rows), stream);
    check(cudaMemcpyAsync(d_got->p, got, bytes, cudaMemcpyHostToDevice, stream), "upload");
  }
  const unsigned blocks = unsigned(rows < int64_t(kMaxBlocks) ? rows : int64_t(kMaxBlocks));
  reference_kernel<<<blocks, kThreads, 0, stream>>>(x, g, e, row0, rows, d_got ? d_got->p : nullptr, d_ref.p,
                                                   d_bound.p);
  check(cudaGetLastError(), "launch");
  check(cudaMemcpyAsync(ref, d_ref.p, bytes, cudaMemcpyDeviceToHost, stream), "download");
  check(cudaMemcpyAsync(bound, d_bound.p, bytes, cudaMemcpyDeviceToHost, stream), "download");
  check(cudaStreamSynchronize(stream), "sync");
}

}  // namespace assay::reduce
