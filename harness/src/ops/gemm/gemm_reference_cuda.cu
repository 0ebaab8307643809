#include "ops/gemm/gemm_reference_cuda.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "backend/cuda/reference_scratch.h"
#include "core/error.h"

namespace assay::reference {
namespace {

void check(cudaError_t err, const char* what) { cuda_reference::check(err, "reference", what); }
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw InfraError(fmt::format("reference {}: cuBLAS status {}", what, int(s)));
}

using cuda_reference::DeviceArray;

unsigned blocks_for(int64_t n) {
  int64_t b = (n + 255) / 256;
  return unsigned(b < 1 ? 1 : b > 65536 ? 65536 : b);
}

// Column-major compact copy (ld = rows) of a strided tensor (its block
// scales applied), and of its absolute values.
__global__ void widen_kernel(const std::byte* base, TensorGeom g, BlockScale scale, double* out, double* out_abs) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < g.count(); i += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = i % g.rows(), c = i / g.rows();
    double v = operand_value(base, g, scale, r, c);
    out[i] = v;
    out_abs[i] = fabs(v);
  }
}

// ab, abs_ab are column-major m x n; rows [row0, row0 + rows) of the result
// come out row-major in `out`.
__global__ void combine_kernel(const double* ab, const double* abs_ab, const std::byte* c0, TensorGeom gc,
                               double alpha, double beta, int64_t row0, int64_t rows, GemmResult out) {
  const int size = dtype_bytes(gc.dtype);
  const int64_t count = rows * gc.cols();
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = row0 + i / gc.cols(), c = i % gc.cols(), cm = c * gc.rows() + r;
    double c0v = beta == 0.0 ? 0.0 : decode(gc.dtype, load_bits(gc.dtype, c0 + gc.index(r, c) * size));
    combine(ab[cm], abs_ab[cm], c0v, alpha, beta, out, i);
  }
}

}  // namespace

void gemm_cublas(cublasContext* handle, void* stream_ptr, const GemmOperands& op, const RowBlockVisitor& visit,
                 bool in_device) {
  auto stream = cudaStream_t(stream_ptr);
  const int64_t m = op.gc.rows(), n = op.gc.cols(), k = op.ga.cols();
  if (m == 0 || n == 0) return;
  DeviceArray ab(m * n, stream), abs_ab(m * n, stream);
  check(cudaMemsetAsync(ab.p, 0, m * n * sizeof(double), stream), "memset");
  check(cudaMemsetAsync(abs_ab.p, 0, m * n * sizeof(double), stream), "memset");
  if (k > 0 && op.alpha != 0.0) {  // the widened operands are freed before the blocks
    DeviceArray a(m * k, stream), a_abs(m * k, stream), b(k * n, stream), b_abs(k * n, stream);
    widen_kernel<<<blocks_for(m * k), 256, 0, stream>>>(op.a, op.ga, op.sa, a.p, a_abs.p);
    widen_kernel<<<blocks_for(k * n), 256, 0, stream>>>(op.b, op.gb, op.sb, b.p, b_abs.p);
    check(cudaGetLastError(), "widen launch");
    const double one = 1.0, zero = 0.0;
    // 64-bit cuBLAS API: m, n, k and leading dimensions may pass 2^31.
    check(cublasDgemm_64(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a.p, m, b.p, k, &zero, ab.p, m), "DGEMM");
    check(cublasDgemm_64(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a_abs.p, m, b_abs.p, k, &zero, abs_ab.p, m),
          "DGEMM |A||B|");
  }
  const int64_t block = reference_block_rows(m, n, 0);
  DeviceArray out_ref(block * n, stream), out_bound(block * n, stream), out_terms(block * n, stream);
  const size_t host_count = in_device ? 0 : size_t(block * n);
  std::vector<double> ref(host_count), bound(host_count), terms(host_count);
  for (int64_t row0 = 0; row0 < m; row0 += block) {
    const int64_t rows = std::min(block, m - row0);
    combine_kernel<<<blocks_for(rows * n), 256, 0, stream>>>(ab.p, abs_ab.p, op.c0, op.gc, op.alpha, op.beta, row0,
                                                             rows, GemmResult{out_ref.p, out_bound.p, out_terms.p});
    check(cudaGetLastError(), "combine launch");
    if (in_device) {  // the visitor's work is queued on the same stream
      visit(row0, rows, GemmResult{out_ref.p, out_bound.p, out_terms.p});
      continue;
    }
    const size_t bytes = size_t(rows * n) * sizeof(double);
    check(cudaMemcpyAsync(ref.data(), out_ref.p, bytes, cudaMemcpyDeviceToHost, stream), "download");
    check(cudaMemcpyAsync(bound.data(), out_bound.p, bytes, cudaMemcpyDeviceToHost, stream), "download");
    check(cudaMemcpyAsync(terms.data(), out_terms.p, bytes, cudaMemcpyDeviceToHost, stream), "download");
    check(cudaStreamSynchronize(stream), "reference sync");
    visit(row0, rows, GemmResult{ref.data(), bound.data(), terms.data()});
  }
}

}  // namespace assay::reference
