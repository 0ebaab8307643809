#include "ops/gemm/gemm_reference_cuda.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "backend/cuda/device_compare.cuh"
#include "backend/cuda/matrix_walk.cuh"
#include "backend/cuda/reference_scratch.h"
#include "core/error.h"

namespace assay::reference {
namespace {

void check(cudaError_t err, const char* what) { cuda_reference::check(err, "reference", what); }
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw InfraError(fmt::format("reference {}: cuBLAS status {}", what, int(s)));
}

using cuda_reference::DeviceArray;

// A widened operand: its elements exactly as doubles (block scales applied)
// and their absolute values, compact, in the source's own orientation so
// that the widening reads and writes along memory both (a column-major copy
// of a row-major operand read it a sector per element): row-major (ld =
// cols) where the source's columns lie nearer than its rows, else
// column-major (ld = rows). The DGEMMs take either through their op flags.
// The absolute values are doubles, or floats for the TF32 bound (below),
// in the first half of the same array.
struct Widened {
  int64_t rows, cols;
  bool row_major;
  DeviceArray v, abs;
  Widened(const TensorGeom& g, cudaStream_t s)
      : rows(g.rows()), cols(g.cols()), row_major(std::llabs(g.col_stride()) <= std::llabs(g.row_stride())),
        v(size_t(rows * cols), s), abs(size_t(rows * cols), s) {}
  int64_t ld() const { return std::max<int64_t>(1, row_major ? cols : rows); }
  int64_t at(int64_t r, int64_t c) const { return row_major ? r * cols + c : r + c * rows; }
  float* abs32() const { return reinterpret_cast<float*>(abs.p); }
  // As the DGEMMs of C^T = B^T A^T read it (gemm_cublas): stored as the
  // transpose of a column-major matrix when row-major, so no op; else op T.
  cublasOperation_t op() const { return row_major ? CUBLAS_OP_N : CUBLAS_OP_T; }
};

// The bound's products |A||B| need no FP64: they only scale the tolerance,
// and a sum of terms that are all >= 0 cancels nothing. So a large GEMM's
// are summed by TF32 tensor cores (inputs cut to 10 bits: each term at
// most 2^-9 low; sums with 21 bits or more: at most k 2^-21 low), then
// raised by more than that (tf32_bound_raise), so that the bound is never
// below the exact one and at most some 2^-6 above it (0.6 % at k = 4096).
// Valid where every product and sum is a normal FP32 number: each
// |operand| zero or in [2^-40, 2^40], and k at most 2^14.
// The widening checks the range and the DGEMM takes any other case
// (non-finite values included). Past kTf32BoundMinWork multiply-adds the
// TF32 GEMM saves most of a DGEMM (one of the reference's two).
constexpr double kTf32BoundMinWork = double(int64_t(1) << 30);
constexpr int64_t kTf32BoundMaxK = int64_t(1) << 14;
constexpr double kTf32RangeLow = 0x1p-40, kTf32RangeHigh = 0x1p40;
double tf32_bound_raise(int64_t k) { return 1.0 + 0x1p-8 + double(k) * 0x1p-21; }

// abs32 null: the absolute values as doubles in out_abs. Otherwise as
// floats in abs32, and *out_of_range set where one is outside the TF32
// bound's range (or not finite).
__global__ void widen_kernel(const std::byte* base, const __grid_constant__ TensorGeom g, const __grid_constant__ BlockScale scale, bool row_major, double* out,
                             double* out_abs, float* abs32, unsigned* out_of_range) {
  const int64_t rows = g.rows(), cols = g.cols();
  const int64_t outer = row_major ? rows : cols, inner = row_major ? cols : rows;
  cuda_walk::for_each_outer(outer, [&](int64_t o) {
    cuda_walk::for_each_inner(inner, [&](int64_t in) {
      const int64_t r = row_major ? o : in, c = row_major ? in : o;
      const double v = operand_value(base, g, scale, r, c), a = fabs(v);
      out[o * inner + in] = v;
      if (!abs32) {
        out_abs[o * inner + in] = a;
        return;
      }
      abs32[o * inner + in] = float(a);
      if (a != 0.0 && !(a >= kTf32RangeLow && a <= kTf32RangeHigh)) *out_of_range = 1u;  // NaN too
    });
  });
}
// out_of_range null: the absolute values as doubles; else as floats (Widened::abs32).
void widen(const std::byte* base, const TensorGeom& g, const BlockScale& scale, Widened& w, cudaStream_t s,
           unsigned* out_of_range = nullptr) {
  const cuda_walk::Launch l = w.row_major ? cuda_walk::launch_for(w.rows, w.cols) : cuda_walk::launch_for(w.cols, w.rows);
  widen_kernel<<<l.grid, l.block, 0, s>>>(base, g, scale, w.row_major, w.v.p, w.abs.p,
                                          out_of_range ? w.abs32() : nullptr, out_of_range);
}

// out = double(in) * raise, n elements (the TF32 bound widened and raised).
__global__ void raise_kernel(const float* in, int64_t n, double raise, double* out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    out[i] = double(in[i]) * raise;
}

// |A||B| (row-major m x n, as the DGEMMs leave it) from the operands'
// absolute values as floats, by TF32 tensor cores, widened and raised.
void tf32_bound(cublasContext* handle, cudaStream_t stream, const Widened& a, const Widened& b, int64_t m, int64_t n,
                int64_t k, double* abs_ab) {
  DeviceArray sums(size_t(m * n + 1) / 2, stream);  // m n floats
  auto* out = reinterpret_cast<float*>(sums.p);
  // The handle's pedantic math mode (plain FP64 for the DGEMMs) is lifted
  // for this call alone, so that nothing in cuBLAS holds the compute type back.
  cublasMath_t mode{};
  check(cublasGetMathMode(handle, &mode), "math mode");
  check(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH), "math mode");
  const float one = 1.0f, zero = 0.0f;
  const cublasStatus_t st =
      cublasGemmEx_64(handle, b.op(), a.op(), n, m, k, &one, b.abs32(), CUDA_R_32F, b.ld(), a.abs32(), CUDA_R_32F,
                      a.ld(), &zero, out, CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
  check(cublasSetMathMode(handle, mode), "math mode");
  check(st, "TF32 |A||B|");
  const int64_t count = m * n;
  raise_kernel<<<unsigned(std::min<int64_t>((count + 255) / 256, 4096)), 256, 0, stream>>>(out, count,
                                                                                         tf32_bound_raise(k), abs_ab);
  check(cudaGetLastError(), "raise launch");
}

// ab, abs_ab are row-major m x n; rows [row0, row0 + rows) of the result
// come out row-major in `out`.
__global__ void combine_kernel(const double* ab, const double* abs_ab, const std::byte* c0, const __grid_constant__ TensorGeom gc,
                               double alpha, double beta, int64_t row0, int64_t rows, const __grid_constant__ GemmResult out) {
  const int size = dtype_bytes(gc.dtype);
  const int64_t n = gc.cols();
  cuda_walk::for_each_outer(rows, [&](int64_t i) {
    const int64_t r = row0 + i;
    cuda_walk::for_each_inner(n, [&](int64_t c) {
      double c0v = beta == 0.0 ? 0.0 : decode(gc.dtype, load_bits(gc.dtype, c0 + gc.index(r, c) * size));
      combine(ab[r * n + c], abs_ab[r * n + c], c0v, alpha, beta, out, i * n + c);
    });
  });
}

// moved[i][j] = kept[(i + by_rows) mod m][(j + by_cols) mod n], both row-major.
__global__ void rotate_kernel(const double* ab, const double* abs_ab, int64_t m, int64_t n, int64_t by_rows,
                              int64_t by_cols, double* moved_ab, double* moved_abs) {
  cuda_walk::for_each_outer(m, [&](int64_t i) {
    const int64_t from = i + by_rows >= m ? i + by_rows - m : i + by_rows;
    cuda_walk::for_each_inner(n, [&](int64_t j) {
      const int64_t at = from * n + (j + by_cols >= n ? j + by_cols - n : j + by_cols);
      moved_ab[i * n + j] = ab[at];
      moved_abs[i * n + j] = abs_ab[at];
    });
  });
}

// A changed part past this many rows and columns is recomputed whole: one
// DGEMM beats many thin ones.
constexpr size_t kMaxDerivedParts = 64;

// Row `row` of B exactly as doubles, kept with the products for the next
// call's rank-1 update (ProductReuse::keep_b_row).
__global__ void b_row_kernel(const std::byte* b, const __grid_constant__ TensorGeom gb,
                             const __grid_constant__ BlockScale sb, int64_t row, double* out) {
  const int64_t n = gb.cols();
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n; j += int64_t(gridDim.x) * blockDim.x)
    out[j] = operand_value(b, gb, sb, row, j);
}

// The products (row-major m x n) of B whose row `row` was `was` are made
// those of B as it is now: ab += A[:, row] (B[row, :] - was), |A||B| likewise,
// each element by two fused multiply-adds (an FP32, FP16 or FP8 product is
// exact in FP64). *refused is set where that is not exact enough
// (ProductReuse): a value not finite, or |A||B| shrinking past max_shrink
// (kRankOneMaxShrink; less where |A||B| came from the TF32 bound, whose
// raise, relative to the new value, grows by as much).
__global__ void rank_one_kernel(double* ab, double* abs_ab, const std::byte* a, const __grid_constant__ TensorGeom ga,
                                const __grid_constant__ BlockScale sa, const std::byte* b,
                                const __grid_constant__ TensorGeom gb, const __grid_constant__ BlockScale sb,
                                int64_t row, const double* was, int64_t m, int64_t n, double max_shrink,
                                unsigned* refused) {
  cuda_walk::for_each_outer(m, [&](int64_t i) {
    const double x = operand_value(a, ga, sa, i, row);
    cuda_walk::for_each_inner(n, [&](int64_t j) {
      const double before = was[j], now = operand_value(b, gb, sb, row, j);
      const int64_t e = i * n + j;
      const double old_abs = abs_ab[e];
      const double v = fma(x, now, fma(-x, before, ab[e]));
      const double mag = fmax(fma(fabs(x), fabs(now), fma(-fabs(x), fabs(before), old_abs)), 0.0);
      const bool finite = isfinite(x) && isfinite(before) && isfinite(now) && isfinite(old_abs) && isfinite(v);
      if (!finite || old_abs > max_shrink * mag) *refused = 1u;
      ab[e] = v;
      abs_ab[e] = mag;
    });
  });
}

// A small GEMM's products summed directly, one element a thread: no
// widened operands, no DGEMM and no scratch beside the products, so a small
// case's judged call is this kernel and the comparison. Up to this much work
// (m n k) and this long a sum per element (a thread's serial chain); past
// them the widened operands, the DGEMMs and the derivations pay.
constexpr double kDirectMaxWork = double(int64_t(1) << 22);
constexpr int64_t kDirectMaxK = 128;
bool direct_pays(int64_t m, int64_t n, int64_t k) {
  return k <= kDirectMaxK && double(m) * double(n) * double(k) <= kDirectMaxWork;
}

// Element e = r n + c: A(r, :) B(:, c) and |A(r, :)| |B(:, c)| in FP64 (an
// FP32, FP16 or FP8 product is exact there; the sums are the DGEMM's, in
// another order). kIn: A's and B's dtype when compiled (both the same, no
// block scales), so a term is two typed loads; -1: operand_value at run
// time. Four terms' loads go out before their sums, which stay in order.
template <int kIn>
__device__ double direct_operand(const std::byte* base, const TensorGeom& g, const BlockScale& s, int64_t r,
                                 int64_t c) {
  if constexpr (kIn < 0) return operand_value(base, g, s, r, c);
  else return decode(DType(kIn), load_bits(DType(kIn), base + g.index(r, c) * dtype_bytes(DType(kIn))));
}
template <int kIn>
__global__ void direct_products_kernel(const __grid_constant__ GemmOperands op, int64_t m, int64_t n, int64_t k,
                                       double* ab, double* abs_ab) {
  const int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= m * n) return;
  const int64_t r = e / n, c = e - r * n;
  constexpr int kAhead = 4;
  double sum = 0.0, mag = 0.0;
  int64_t j = 0;
  for (; j + kAhead <= k; j += kAhead) {
    double x[kAhead], y[kAhead];
#pragma unroll
    for (int u = 0; u < kAhead; ++u) {
      x[u] = direct_operand<kIn>(op.a, op.ga, op.sa, r, j + u);
      y[u] = direct_operand<kIn>(op.b, op.gb, op.sb, j + u, c);
    }
#pragma unroll
    for (int u = 0; u < kAhead; ++u) sum = fma(x[u], y[u], sum), mag = fma(fabs(x[u]), fabs(y[u]), mag);
  }
  for (; j < k; ++j) {
    const double x = direct_operand<kIn>(op.a, op.ga, op.sa, r, j), y = direct_operand<kIn>(op.b, op.gb, op.sb, j, c);
    sum = fma(x, y, sum), mag = fma(fabs(x), fabs(y), mag);
  }
  ab[e] = sum;
  abs_ab[e] = mag;
}
void direct_products(const GemmOperands& op, int64_t m, int64_t n, int64_t k, double* ab, double* abs_ab,
                     cudaStream_t s) {
  const unsigned blocks = unsigned((m * n + 255) / 256);
  const DType t = op.ga.dtype;
  const bool typed = op.gb.dtype == t && !op.sa.data && !op.sb.data;
  auto launch = [&](auto kernel) { kernel<<<blocks, 256, 0, s>>>(op, m, n, k, ab, abs_ab); };
  if (typed && t == DType::f32) launch(direct_products_kernel<int(DType::f32)>);
  else if (typed && t == DType::f16) launch(direct_products_kernel<int(DType::f16)>);
  else if (typed && t == DType::bf16) launch(direct_products_kernel<int(DType::bf16)>);
  else launch(direct_products_kernel<-1>);
}

}  // namespace

// Row-major m x n (the combine and the comparison read them along C's rows):
// computed as C^T = B^T A^T, column-major n x m.
struct DeviceProducts {
  int64_t m, n;
  bool whole = false;  // every product computed (a failure part way leaves nothing to derive from)
  DeviceArray ab, abs_ab;
  bool abs_tf32 = false;  // abs_ab (in part) from the TF32 bound: raised, up to 2^-6 of itself
  int64_t b_row = -1;  // >= 0: b_row_values holds this row of the B they were computed from
  std::unique_ptr<DeviceArray> b_row_values;
  DeviceProducts(int64_t rows, int64_t cols, cudaStream_t s) : m(rows), n(cols), ab(rows * cols, s), abs_ab(rows * cols, s) {}
};
void DeviceProductsDeleter::operator()(DeviceProducts* p) const { delete p; }

namespace {

// This call's products A*B and |A||B| (m, n > 0): computed, or derived from
// the earlier call's in *reuse, into *reuse->kept (or `local` without one),
// which is returned.
KeptProducts& form_products(cublasContext* handle, cudaStream_t stream, const GemmOperands& op, ProductReuse* reuse,
                            KeptProducts& local) {
  const int64_t m = op.gc.rows(), n = op.gc.cols(), k = op.ga.cols();
  KeptProducts& prods = reuse && reuse->kept ? *reuse->kept : local;
  const bool products = k > 0 && op.alpha != 0.0;  // otherwise A*B is zero (BLAS: not referenced)
  bool derive = reuse && reuse->derivable && prods && prods->whole && prods->m == m && prods->n == n &&
                reuse->changed_rows.size() + reuse->changed_cols.size() <= kMaxDerivedParts;
  const double work = double(m) * double(n) * double(k);
  if (derive && reuse->changed_b_row >= 0) {  // a rank-1 update, where it is worth it and exact enough
    derive = products && prods->b_row == reuse->changed_b_row && prods->b_row_values &&
             reuse->changed_b_row < k && work >= reuse->rank_one_min_work;
    if (derive) {
      prods->whole = false;
      DeviceArray flag(1, stream);
      auto* refused = reinterpret_cast<unsigned*>(flag.p);
      check(cudaMemsetAsync(refused, 0, sizeof(unsigned), stream), "memset");
      const cuda_walk::Launch l = cuda_walk::launch_for(m, n);
      rank_one_kernel<<<l.grid, l.block, 0, stream>>>(prods->ab.p, prods->abs_ab.p, op.a, op.ga, op.sa, op.b, op.gb,
                                                      op.sb, reuse->changed_b_row, prods->b_row_values->p, m, n,
                                                      prods->abs_tf32 ? kRankOneMaxShrinkTf32 : kRankOneMaxShrink,
                                                      refused);
      check(cudaGetLastError(), "rank-1 launch");
      unsigned host_refused = 0;
      check(cudaMemcpyAsync(&host_refused, refused, sizeof(unsigned), cudaMemcpyDeviceToHost, stream), "download");
      check(cudaStreamSynchronize(stream), "rank-1 sync");
      if (host_refused) derive = false, reuse->rank_one_refused = true;  // computed whole below
    }
  }
  if (!derive) {
    if (!prods || prods->m != m || prods->n != n) prods.reset(new DeviceProducts(m, n, stream));
    prods->abs_tf32 = false;
    if (!products) {
      check(cudaMemsetAsync(prods->ab.p, 0, m * n * sizeof(double), stream), "memset");
      check(cudaMemsetAsync(prods->abs_ab.p, 0, m * n * sizeof(double), stream), "memset");
    }
  }
  if (reuse) reuse->derived = derive;
  if (derive && (reuse->rotate_rows > 0 || reuse->rotate_cols > 0)) {
    if (reuse->rotate_rows >= m || reuse->rotate_cols >= n || reuse->rotate_rows < 0 || reuse->rotate_cols < 0)
      throw InfraError("reference: a relabelling past the result's extent");
    KeptProducts moved(new DeviceProducts(m, n, stream));
    const cuda_walk::Launch l = cuda_walk::launch_for(m, n);
    rotate_kernel<<<l.grid, l.block, 0, stream>>>(prods->ab.p, prods->abs_ab.p, m, n, reuse->rotate_rows,
                                                  reuse->rotate_cols, moved->ab.p, moved->abs_ab.p);
    check(cudaGetLastError(), "rotate launch");
    moved->whole = true, moved->abs_tf32 = prods->abs_tf32;
    prods = std::move(moved);  // the earlier products freed in stream order, after the gather
  }
  prods->whole = false, prods->b_row = -1;
  const bool changed = !derive || !reuse->changed_rows.empty() || !reuse->changed_cols.empty();
  double* ab = prods->ab.p;
  double* abs_ab = prods->abs_ab.p;
  if (products && changed) {  // the widened operands are freed before the blocks
    Widened a(op.ga, stream), b(op.gb, stream);
    // Whole and large: the bound by TF32, unless an operand is out of its range.
    bool tf32 = !derive && work >= kTf32BoundMinWork && k <= kTf32BoundMaxK;
    if (tf32) {
      DeviceArray flag(1, stream);
      auto* out_of_range = reinterpret_cast<unsigned*>(flag.p);
      check(cudaMemsetAsync(out_of_range, 0, sizeof(unsigned), stream), "memset");
      widen(op.a, op.ga, op.sa, a, stream, out_of_range);
      widen(op.b, op.gb, op.sb, b, stream, out_of_range);
      unsigned host_flag = 0;
      check(cudaMemcpyAsync(&host_flag, out_of_range, sizeof(unsigned), cudaMemcpyDeviceToHost, stream), "download");
      check(cudaStreamSynchronize(stream), "widen sync");
      tf32 = host_flag == 0;
    }
    if (!tf32) {
      widen(op.a, op.ga, op.sa, a, stream);
      widen(op.b, op.gb, op.sb, b, stream);
    }
    check(cudaGetLastError(), "widen launch");
    const double one = 1.0, zero = 0.0;
    // C^T (n x m, ld n) = op(B) op(A) as cuBLAS sees the widened arrays.
    // 64-bit cuBLAS API: m, n, k and leading dimensions may pass 2^31.
    auto dgemm = [&](int64_t rows, int64_t cols, const double* x, const double* y, double* out, const char* what) {
      check(cublasDgemm_64(handle, b.op(), a.op(), rows, cols, k, &one, x, b.ld(), y, a.ld(), &zero, out, n), what);
    };
    if (!derive) dgemm(n, m, b.v.p, a.v.p, ab, "DGEMM");
    if (!derive && !tf32) dgemm(n, m, b.abs.p, a.abs.p, abs_ab, "DGEMM |A||B|");
    if (tf32) {
      tf32_bound(handle, stream, a, b, m, n, k, abs_ab);
      prods->abs_tf32 = true;
    }
    // Derived: row r of the products (C^T's column r, at ab + r*n) is B^T
    // times A's row r (A^T's column r, at A's element (r, 0)); column j
    // (C^T's row j, at ab + j with ld n) is B's column j (at B's (0, j))
    // times A^T. Each slice keeps its parent's leading dimension and op.
    if (derive)
      for (int64_t r : reuse->changed_rows) {
        if (r < 0 || r >= m) continue;
        dgemm(n, 1, b.v.p, a.v.p + a.at(r, 0), ab + r * n, "DGEMM row");
        dgemm(n, 1, b.abs.p, a.abs.p + a.at(r, 0), abs_ab + r * n, "DGEMM |A||B| row");
      }
    if (derive)
      for (int64_t j : reuse->changed_cols) {
        if (j < 0 || j >= n) continue;
        dgemm(1, m, b.v.p + b.at(0, j), a.v.p, ab + j, "DGEMM column");
        dgemm(1, m, b.abs.p + b.at(0, j), a.abs.p, abs_ab + j, "DGEMM |A||B| column");
      }
  }
  prods->whole = true;
  if (reuse && products && reuse->keep_b_row >= 0 && reuse->keep_b_row < k && work >= reuse->rank_one_min_work) {
    if (!prods->b_row_values) prods->b_row_values = std::make_unique<DeviceArray>(size_t(n), stream);
    b_row_kernel<<<unsigned(std::min<int64_t>((n + 255) / 256, 1024)), 256, 0, stream>>>(
        op.b, op.gb, op.sb, reuse->keep_b_row, prods->b_row_values->p);
    check(cudaGetLastError(), "B row launch");
    prods->b_row = reuse->keep_b_row;
  }
  return prods;
}

// A small GEMM's products for judging (compare_with_products): summed
// afresh each call by direct_products into the kept products, nothing
// derived. (gemm_cublas, which the dumps, the host's blocks and the tests of
// derivation use, keeps the DGEMM path at every size.)
KeptProducts& direct_form(cudaStream_t stream, const GemmOperands& op, ProductReuse* reuse, KeptProducts& local) {
  const int64_t m = op.gc.rows(), n = op.gc.cols(), k = op.ga.cols();
  KeptProducts& prods = reuse && reuse->kept ? *reuse->kept : local;
  if (!prods || prods->m != m || prods->n != n) prods.reset(new DeviceProducts(m, n, stream));
  if (k > 0 && op.alpha != 0.0) {
    direct_products(op, m, n, k, prods->ab.p, prods->abs_ab.p, stream);
    check(cudaGetLastError(), "direct products launch");
  } else {  // A*B is zero (BLAS: not referenced)
    check(cudaMemsetAsync(prods->ab.p, 0, m * n * sizeof(double), stream), "memset");
    check(cudaMemsetAsync(prods->abs_ab.p, 0, m * n * sizeof(double), stream), "memset");
  }
  prods->whole = true, prods->b_row = -1;
  if (reuse) reuse->derived = false;
  return prods;
}

// Element i (row-major over m x n) of the result formed from the products
// as the comparison reads it (cuda_judge::Comparer::compare_from).
struct ProductsSource {
  const double *ab, *abs_ab;
  const std::byte* c0;  // C0 at its data start; not read when beta == 0
  TensorGeom gc;
  double alpha, beta;
  struct Raw {
    double ab, abs_ab;
    uint64_t c0;  // C0's bits; 0 when beta == 0
  };
  __device__ Raw load(int64_t i, int64_t r, int64_t c) const {
    return {ab[i], abs_ab[i], beta == 0.0 ? 0 : load_bits(gc.dtype, c0 + gc.index(r, c) * dtype_bytes(gc.dtype))};
  }
  __device__ cuda_judge::Figures figures(const Raw& x) const {
    const Combined f = combined(x.ab, x.abs_ab, beta == 0.0 ? 0.0 : decode(gc.dtype, x.c0), alpha, beta);
    return {f.ref, f.bound, f.terms};
  }
};

}  // namespace

void gemm_cublas(cublasContext* handle, void* stream_ptr, const GemmOperands& op, const RowBlockVisitor& visit,
                 bool in_device, ProductReuse* reuse) {
  auto stream = cudaStream_t(stream_ptr);
  const int64_t m = op.gc.rows(), n = op.gc.cols();
  if (m == 0 || n == 0) return;
  KeptProducts local;
  KeptProducts& prods = form_products(handle, stream, op, reuse, local);
  const double* ab = prods->ab.p;
  const double* abs_ab = prods->abs_ab.p;
  const int64_t block = reference_block_rows(m, n, 0);
  DeviceArray out_ref(block * n, stream), out_bound(block * n, stream), out_terms(block * n, stream);
  const size_t host_count = in_device ? 0 : size_t(block * n);
  std::vector<double> ref(host_count), bound(host_count), terms(host_count);
  for (int64_t row0 = 0; row0 < m; row0 += block) {
    const int64_t rows = std::min(block, m - row0);
    const cuda_walk::Launch l = cuda_walk::launch_for(rows, n);
    combine_kernel<<<l.grid, l.block, 0, stream>>>(ab, abs_ab, op.c0, op.gc, op.alpha, op.beta, row0, rows,
                                                   GemmResult{out_ref.p, out_bound.p, out_terms.p});
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

CompareStats compare_with_products(cublasContext* handle, void* stream_ptr, const GemmOperands& op,
                                   cuda_judge::Comparer& comparer, const Tolerance& tol, const TensorGeom& g,
                                   const std::byte* out, const ClassRefs& classes, ProductReuse* reuse) {
  auto stream = cudaStream_t(stream_ptr);
  if (op.gc.rows() == 0 || op.gc.cols() == 0) return {};
  KeptProducts local;
  const bool direct = direct_pays(op.gc.rows(), op.gc.cols(), op.ga.cols());
  const KeptProducts& prods = direct ? direct_form(stream, op, reuse, local)
                                     : form_products(handle, stream, op, reuse, local);
  const ProductsSource src{prods->ab.p, prods->abs_ab.p, op.c0, op.gc, op.alpha, op.beta};
  return comparer.compare_from(stream, tol, g, out, src, classes);
}

}  // namespace assay::reference
