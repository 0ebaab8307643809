// Device reference: one 256-thread block per row (a grid-stride loop over
// rows, so any number of them), the inputs read in device memory through
// their geometries, results brought back to host arrays.
#include <cuda_runtime.h>

#include <fmt/format.h>

#include "backend/cuda/reference_scratch.h"
#include "core/error.h"
#include "ops/norm/norm_reference_cuda.h"

namespace assay::norm {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

void check(cudaError_t err, const char* what) { cuda_reference::check(err, "norm reference", what); }

// A block-wide merge of T; every thread gets the result.
template <class T>
__device__ T block_reduce(T v, T* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int step = kThreads / 2; step > 0; step /= 2) {
    if (int(threadIdx.x) < step) merge(shared[threadIdx.x], shared[threadIdx.x + step]);
    __syncthreads();
  }
  T out = shared[0];
  __syncthreads();
  return out;
}

__device__ double load(const std::byte* p, const TensorGeom& g, int64_t r, int64_t c) {
  return decode(g.dtype, load_bits(g.dtype, p + g.index(r, c) * dtype_bytes(g.dtype)));
}

__global__ void reference_kernel(const __grid_constant__ Inputs in, const __grid_constant__ ErrorModel e, int64_t row0, int64_t rows, double* y_ref, double* y_bound,
                                 double* stat) {
  __shared__ RowPass1 part1[kThreads];
  __shared__ RowPass2 part2[kThreads];
  const int64_t n = in.gx.cols();
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t row = row0 + r;
    RowPass1 p1;
    for (int64_t c = threadIdx.x; c < n; c += kThreads) add(p1, load(in.x, in.gx, row, c));
    p1 = block_reduce(p1, part1);
    RowPass2 p2;
    if (!e.rms && p1.count > 0 && finite_row(p1)) {
      const double mean = row_mean(p1);
      for (int64_t c = threadIdx.x; c < n; c += kThreads) add(p2, load(in.x, in.gx, row, c), mean);
    }
    p2 = block_reduce(p2, part2);
    const RowStats st = finish(e, p1, p2);
    if (threadIdx.x == 0) {
      stat[0 * rows + r] = st.mean, stat[1 * rows + r] = st.mean_bound;
      stat[2 * rows + r] = st.rstd, stat[3 * rows + r] = st.rstd_bound;
    }
    for (int64_t c = threadIdx.x; c < n; c += kThreads) {
      const double w = load(in.w, in.gw, 0, c), b = in.b ? load(in.b, in.gb, 0, c) : 0.0;
      element(e, st, load(in.x, in.gx, row, c), w, b, y_ref + r * n + c, y_bound + r * n + c);
    }
  }
}

}  // namespace

void reference_cuda(void* stream_ptr, const Inputs& in, const ErrorModel& e, int64_t row0, int64_t rows,
                    const BlockOut& out) {
  auto stream = cudaStream_t(stream_ptr);
  if (rows == 0) return;
  for (int i = 1; i < 4; ++i)
    if (out.stat[i] != out.stat[0] + i * rows) throw InfraError("norm reference: the stat arrays are not one block's");
  const unsigned blocks = unsigned(rows < kMaxBlocks ? rows : kMaxBlocks);
  reference_kernel<<<blocks, kThreads, 0, stream>>>(in, e, row0, rows, out.y_ref, out.y_bound, out.stat[0]);
  check(cudaGetLastError(), "launch");
}

}  // namespace assay::norm
