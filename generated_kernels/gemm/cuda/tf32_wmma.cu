// Correct cuda kernel under `compute: tf32`: tensor-core GEMM with WMMA
// m16n16k8 TF32 fragments (sm_80 and later). A block of 4 warps computes a
// 32x32 tile of C; each k step of 8 stages A (32x8) and B (8x32) in shared
// memory, zero-filled outside the matrices and rounded to TF32
// (__float_to_tf32); the f32 accumulators go through shared memory to a
// masked double epilogue. Any m, n, k, strides and offsets.
// Expected verdict: pass.
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <mma.h>

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

using namespace nvcuda;
constexpr int T = 32, KS = 8;  // C tile 32x32 per block (2x2 warps of 16x16), k step 8

__global__ void __launch_bounds__(128) gemm_wmma(Mat A, Mat B, Mat C, double alpha, double beta) {
  __shared__ __align__(128) float As[T][KS];
  __shared__ __align__(128) float Bs[KS][T];
  __shared__ __align__(128) float Cs[T][T];  // wmma wants 256-bit aligned tile pointers
  const int warp = threadIdx.x / 32, wr = warp / 2, wc = warp % 2;
  const int64_t m = C.rows, n = C.cols, k = A.cols;
  for (int64_t bi = blockIdx.y; bi * T < m; bi += gridDim.y)
    for (int64_t bj = blockIdx.x; bj * T < n; bj += gridDim.x) {
      wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
      wmma::fill_fragment(acc, 0.0f);
      for (int64_t p0 = 0; p0 < k; p0 += KS) {
        for (int e = threadIdx.x; e < T * KS; e += blockDim.x) {  // 256 entries each of A and B
          const int ar = e / KS, ac = e % KS, br = e / T, bc = e % T;
          const int64_t i = bi * T + ar, pa = p0 + ac, pb = p0 + br, j = bj * T + bc;
          As[ar][ac] = wmma::__float_to_tf32(i < m && pa < k ? A.at<float>(i, pa) : 0.0f);
          Bs[br][bc] = wmma::__float_to_tf32(pb < k && j < n ? B.at<float>(pb, j) : 0.0f);
        }
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, &As[wr * 16][0], KS);
        wmma::load_matrix_sync(fb, &Bs[0][wc * 16], T);
        wmma::mma_sync(acc, fa, fb, acc);
        __syncthreads();
      }
      wmma::store_matrix_sync(&Cs[wr * 16][wc * 16], acc, T, wmma::mem_row_major);
      __syncthreads();
      for (int e = threadIdx.x; e < T * T; e += blockDim.x) {
        const int64_t i = bi * T + e / T, j = bj * T + e % T;
        if (i < m && j < n) C.at<float>(i, j) = float(combine(Cs[e / T][e % T], alpha, beta, C.at<float>(i, j)));
      }
      __syncthreads();  // Cs is reused by the next tile
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
  const dim3 grid = grid_for(C.rows, C.cols, dim3(T, T));
  gemm_wmma<<<grid, 128, 0, stream>>>(A, B, C, alpha, beta);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
