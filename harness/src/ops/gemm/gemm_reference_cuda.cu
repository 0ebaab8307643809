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

// A changed part past this many rows and columns is recomputed whole: one
// DGEMM beats many thin ones.
constexpr size_t kMaxDerivedParts = 64;

}  // namespace

struct DeviceProducts {
  int64_t m, n;
  bool whole = false;  // every product computed (a failure part way leaves nothing to derive from)
  DeviceArray ab, abs_ab;
  DeviceProducts(int64_t rows, int64_t cols, cudaStream_t s) : m(rows), n(cols), ab(rows * cols, s), abs_ab(rows * cols, s) {}
};
void DeviceProductsDeleter::operator()(DeviceProducts* p) const { delete p; }

void gemm_cublas(cublasContext* handle, void* stream_ptr, const GemmOperands& op, const RowBlockVisitor& visit,
                 bool in_device, ProductReuse* reuse) {
  auto stream = cudaStream_t(stream_ptr);
  const int64_t m = op.gc.rows(), n = op.gc.cols(), k = op.ga.cols();
  if (m == 0 || n == 0) return;
  // The products: this call's own, or kept for the next call (and maybe
  // derived from the last one's).
  KeptProducts local;
  KeptProducts& prods = reuse && reuse->kept ? *reuse->kept : local;
  const bool derive = reuse && reuse->derivable && prods && prods->whole && prods->m == m && prods->n == n &&
                      reuse->changed_rows.size() + reuse->changed_cols.size() <= kMaxDerivedParts;
  if (!derive) {
    if (!prods || prods->m != m || prods->n != n) prods.reset(new DeviceProducts(m, n, stream));
    check(cudaMemsetAsync(prods->ab.p, 0, m * n * sizeof(double), stream), "memset");
    check(cudaMemsetAsync(prods->abs_ab.p, 0, m * n * sizeof(double), stream), "memset");
  }
  if (reuse) reuse->derived = derive;
  prods->whole = false;
  const bool changed = !derive || !reuse->changed_rows.empty() || !reuse->changed_cols.empty();
  double* ab = prods->ab.p;
  double* abs_ab = prods->abs_ab.p;
  if (k > 0 && op.alpha != 0.0 && changed) {  // the widened operands are freed before the blocks
    DeviceArray a(m * k, stream), a_abs(m * k, stream), b(k * n, stream), b_abs(k * n, stream);
    widen_kernel<<<blocks_for(m * k), 256, 0, stream>>>(op.a, op.ga, op.sa, a.p, a_abs.p);
    widen_kernel<<<blocks_for(k * n), 256, 0, stream>>>(op.b, op.gb, op.sb, b.p, b_abs.p);
    check(cudaGetLastError(), "widen launch");
    const double one = 1.0, zero = 0.0;
    // 64-bit cuBLAS API: m, n, k and leading dimensions may pass 2^31.
    if (!derive) {
      check(cublasDgemm_64(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a.p, m, b.p, k, &zero, ab, m), "DGEMM");
      check(cublasDgemm_64(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a_abs.p, m, b_abs.p, k, &zero, abs_ab, m),
            "DGEMM |A||B|");
    }
    // Derived: row r of the products is row r of A times B (A's row r: a 1 x k
    // matrix at a + r with leading dimension m, and so the product's row);
    // column j is A times column j of B (at b + j*k, the product's at j*m).
    if (derive)
      for (int64_t r : reuse->changed_rows) {
        if (r < 0 || r >= m) continue;
        check(cublasDgemm_64(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, n, k, &one, a.p + r, m, b.p, k, &zero, ab + r, m),
              "DGEMM row");
        check(cublasDgemm_64(handle, CUBLAS_OP_N, CUBLAS_OP_N, 1, n, k, &one, a_abs.p + r, m, b_abs.p, k, &zero,
                             abs_ab + r, m), "DGEMM |A||B| row");
      }
    if (derive)
      for (int64_t j : reuse->changed_cols) {
        if (j < 0 || j >= n) continue;
        check(cublasDgemm_64(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, 1, k, &one, a.p, m, b.p + j * k, k, &zero, ab + j * m,
                             m), "DGEMM column");
        check(cublasDgemm_64(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, 1, k, &one, a_abs.p, m, b_abs.p + j * k, k, &zero,
                             abs_ab + j * m, m), "DGEMM |A||B| column");
      }
  }
  prods->whole = true;
  const int64_t block = reference_block_rows(m, n, 0);
  DeviceArray out_ref(block * n, stream), out_bound(block * n, stream), out_terms(block * n, stream);
  const size_t host_count = in_device ? 0 : size_t(block * n);
  std::vector<double> ref(host_count), bound(host_count), terms(host_count);
  for (int64_t row0 = 0; row0 < m; row0 += block) {
    const int64_t rows = std::min(block, m - row0);
    combine_kernel<<<blocks_for(rows * n), 256, 0, stream>>>(ab, abs_ab, op.c0, op.gc, op.alpha, op.beta, row0,
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
