// Device reference: cuBLAS DGEMM on exactly widened operands (device pointers
// in `op`), computing A*B in FP64 and |A|*|B| in FP64 (or, for a large GEMM,
// by TF32 raised past its rounding: never below the exact sum); results land
// in host arrays or are judged on the device.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "judge/element_check.h"
#include "ops/gemm/gemm_operands.h"

struct cublasContext;

namespace assay::cuda_judge {
class Comparer;
}

namespace assay::reference {

// A*B and |A|*|B| in FP64 (column-major m x n, device memory) as one call
// computed them, kept for the case's next judged call (defined in the .cu).
struct DeviceProducts;
struct DeviceProductsDeleter {
  void operator()(DeviceProducts* p) const;
};
using KeptProducts = std::unique_ptr<DeviceProducts, DeviceProductsDeleter>;

// Reusing a call's products for a later call of the same case: when the
// later call's A and B are the earlier's but for a few rows of A (rows of
// the result to recompute) and a few columns of B (its columns), only
// those are computed again (C0 is read afresh either way). Row-wise and
// column-wise DGEMMs on the same FP64 operands, so the derived products
// are as exact as a full recompute (they may differ from it only in the
// last bits of FP64 rounding).
// A relabelled call (A's rows and C's moved round by rotate_rows, B's
// columns and C's by rotate_cols) has the earlier products moved the same
// way: a gather, no DGEMM (the earlier products' bits, moved).
// A whole row of B changed (one k index: every element of C) is a rank-1
// update, A's column times the row's change, from the earlier call's row
// kept with its products (keep_b_row). It is made only where it is exact
// enough for a compute type coarser than FP64: every value finite and no
// element of |A||B| shrinking by more than kRankOneMaxShrink (the earlier
// products' FP64 rounding, relative to the new bound, grows by as much);
// otherwise, and for an FP64 compute type, the products are computed whole.
struct ProductReuse {
  KeptProducts* kept = nullptr;  // in: the earlier call's products (empty: none); out: this call's
  bool derivable = false;        // *kept holds this call's products but for the rows and columns below
  std::vector<int64_t> changed_rows, changed_cols;
  int64_t rotate_rows = 0, rotate_cols = 0;  // derivable: *kept moved round so (in [0, m) and [0, n))
  int64_t changed_b_row = -1;    // derivable: and but for this row of B (a rank-1 update)
  int64_t keep_b_row = -1;       // the next call changes this row of B: keep this call's with the products
  // Below this much work (m n k) the two DGEMMs cost less than the rank-1
  // update's check, which waits for the device: the products are computed whole.
  double rank_one_min_work = double(int64_t(1) << 30);
  bool derived = false;          // out: they were derived, not computed whole
  bool rank_one_refused = false; // out: a rank-1 update was tried and refused (computed whole instead)
};
inline constexpr double kRankOneMaxShrink = 4096.0;  // 12 of FP64's 53 bits
// Where |A||B| came from the TF32 bound (gemm_reference_cuda.cu: up to 2^-6
// above the exact sum), a shrink of 8 leaves it at most 1/8 above.
inline constexpr double kRankOneMaxShrinkTf32 = 8.0;

// Hands the result to `visit` in blocks of rows (host arrays, reused from
// block to block; reference_block_rows(m, n, 0) rows each). Device scratch:
// the widened operands and A*B, |A|*|B| whole, the combined result one block
// at a time. Throws InfraError on CUDA or cuBLAS failure (OutOfMemory when the
// device has no room); whatever `visit` throws ends it.
// in_device: the blocks are handed over in device memory (judging on the
// device), otherwise downloaded first.
// reuse: products kept between calls (above); nullptr: computed and freed here.
void gemm_cublas(cublasContext* handle, void* stream, const GemmOperands& op, const RowBlockVisitor& visit,
                 bool in_device = false, ProductReuse* reuse = nullptr);

// Judging on the device: `out` (geometry g, m x n, device memory) compared
// with the result as the comparison forms each element from the products,
// in one pass with one wait, so no array of the result is written or read
// (the blocks of gemm_cublas cost a kernel, three m x n arrays and a wait
// each). classes: m x n arrays, row-major. reuse as for gemm_cublas. A
// small GEMM's products are summed directly, one element a thread (no
// widened operands, no DGEMM), afresh each call: nothing is derived.
CompareStats compare_with_products(cublasContext* handle, void* stream, const GemmOperands& op,
                                   cuda_judge::Comparer& comparer, const Tolerance& tol, const TensorGeom& g,
                                   const std::byte* out, const ClassRefs& classes, ProductReuse* reuse = nullptr);

}  // namespace assay::reference
