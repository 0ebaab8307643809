// Device reference: one thread per element of a block (a grid-stride loop,
// so any count), x read in device memory through the block's geometry, ref
// and bound brought back to host arrays.
#include <cuda_runtime.h>

#include <fmt/format.h>

#include "backend/cuda/reference_scratch.h"
#include "core/error.h"
#include "ops/unary/unary_reference_cuda.h"

namespace assay::unary {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

void check(cudaError_t err, const char* what) { cuda_reference::check(err, "unary reference", what); }

__global__ void reference_kernel(const std::byte* x, const __grid_constant__ TensorGeom g, const __grid_constant__ ErrorModel e, int64_t count, double* ref,
                                 double* bound) {
  const int64_t n = g.cols();
  const int size = dtype_bytes(g.dtype);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x)
    element(e, decode(g.dtype, load_bits(g.dtype, x + g.index(i / n, i % n) * size)), ref + i, bound + i);
}

}  // namespace

void reference_cuda(void* stream_ptr, const std::byte* x, const TensorGeom& g, const ErrorModel& e, double* ref,
                    double* bound) {
  auto stream = cudaStream_t(stream_ptr);
  const int64_t count = g.rows() * g.cols();
  if (count == 0) return;
  const int64_t want = (count + kThreads - 1) / kThreads;
  const unsigned blocks = unsigned(want < kMaxBlocks ? want : kMaxBlocks);
  reference_kernel<<<blocks, kThreads, 0, stream>>>(x, g, e, count, ref, bound);
  check(cudaGetLastError(), "launch");
}

}  // namespace assay::unary
