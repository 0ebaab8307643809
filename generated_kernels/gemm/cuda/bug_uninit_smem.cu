// PLANTED BUG (field-notes 2.9, uninitialized memory): tiled f32 GEMM whose tile
// loads skip the entries past k instead of writing zeros there, while the
// product loop still runs over the whole tile. In the last, partial k tile
// those entries hold the previous tile's values (or, when k < 32, whatever
// the shared memory held before): correct only if k is a multiple of 32, or
// if leftover shared memory happens to be zero.
// Expected verdict: nan_mismatch: where no earlier tile of the call wrote the
// skipped entries (k < 32) they hold what the worker left in shared memory,
// NaN (docs/isolation.md), and the gate meets such a case first (the H200,
// 2026-12-04); a later partial tile's leftovers give mismatch.
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace {

// A 2-D DLTensor in device memory: element (r, c) lives at base + (r*rs + c*cs) elements.
struct Mat {
  char* base;
  int64_t rows, cols, rs, cs;
  template <class T> __device__ T& at(int64_t r, int64_t c) const { return reinterpret_cast<T*>(base)[r * rs + c * cs]; }
};
Mat view(const DLTensor& t) {
  return {static_cast<char*>(t.data) + t.byte_offset, t.shape[0], t.shape[1], t.strides ? t.strides[0] : t.shape[1],
          t.strides ? t.strides[1] : 1};
}

bool same(const DLTensor& t, DLDataType d) {
  return t.ndim == 2 && t.dtype.code == d.code && t.dtype.bits == d.bits && t.dtype.lanes == 1;
}
// True when the call is a GEMM with A and B of type `in` and C of type `out`.
bool gemm_of(const assay_call* call, DLDataType in, DLDataType out) {
  return call->num_inputs == 2 && call->num_outputs == 1 && call->num_scalars == 2 &&
         same(call->inputs[0], in) && same(call->inputs[1], in) && same(call->outputs[0], out);
}

// A 2-D grid of `block`s over rows x cols, each dimension capped at 65535 blocks;
// the kernels stride over whatever the grid does not cover.
dim3 grid_for(int64_t rows, int64_t cols, dim3 block) {
  auto cap = [](int64_t len, unsigned b) { return unsigned(std::min<int64_t>((len + b - 1) / b, 65535)); };
  return dim3(cap(cols, block.x), cap(rows, block.y));
}

// The epilogue, BLAS semantics: alpha == 0 skips A*B (0*Inf is not NaN there),
// beta == 0 never reads C0 (C may hold NaN poison).
__device__ double combine(double ab, double alpha, double beta, float c0) {
  double r = alpha == 0.0 ? 0.0 : alpha * ab;
  if (beta != 0.0) r += beta * c0;
  return r;
}

constexpr int T = 32;  // 32x32 tile of C per block, one thread per element, k in steps of 32

__global__ void __launch_bounds__(T * T) gemm_tiled(Mat A, Mat B, Mat C, double alpha, double beta) {
  __shared__ float As[T][T + 1], Bs[T][T + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t m = C.rows, n = C.cols, k = A.cols;
  for (int64_t bi = blockIdx.y; bi * T < m; bi += gridDim.y)
    for (int64_t bj = blockIdx.x; bj * T < n; bj += gridDim.x) {
      const int64_t i = bi * T + ty, j = bj * T + tx;
      float acc = 0.0f;
      for (int64_t p0 = 0; p0 < k; p0 += T) {
        if (p0 + tx < k) As[ty][tx] = i < m ? A.at<float>(i, p0 + tx) : 0.0f;  // BUG: nothing written past k
        if (p0 + ty < k) Bs[ty][tx] = j < n ? B.at<float>(p0 + ty, j) : 0.0f;
        __syncthreads();
        for (int p = 0; p < T; ++p) acc += As[ty][p] * Bs[p][tx];
        __syncthreads();
      }
      if (i < m && j < n) C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
    }
}

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A = view(call->inputs[0]), B = view(call->inputs[1]), C = view(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  const auto stream = static_cast<cudaStream_t>(call->stream);
  if (C.rows == 0 || C.cols == 0) return ASSAY_OK;
  const dim3 block(T, T), grid = grid_for(C.rows, C.cols, block);
  gemm_tiled<<<grid, block, 0, stream>>>(A, B, C, alpha, beta);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
