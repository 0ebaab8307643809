// window_bug (cuda): a naive f32 GEMM whose last, partial block of
// WINDOW_BLOCK rows of C (default 64) goes to its own remainder kernel when it
// holds more than half a block (m % 64 in 33..63; a remainder of up to half a
// block runs in the main kernel). The remainder kernel stages its row of A in
// shared memory sized for WINDOW_STAGE floats (default 2048) and runs its k
// loop over the staged part only, so for k > 2048 it drops every product past
// the 2048th. Every other shape is right, whatever n. Field notes 2.1 (tail
// bugs), made rare on purpose: the gate's sweep and random cases never pair
// such an m with k > 2048, so it measures whether fuzzing feedback steers
// toward it (scripts/gpu-fuzz-feedback.sh). The GPU twin of
// needle/host/window_bug.cpp.
// window128_bug.yaml builds the same source for 128-row blocks and a 4096-float
// stage (m % 128 in 65..127 and k > 4096): a window no campaign seed sits in.
// Expected verdict: mismatch.
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
__device__ double combine(double ab, double alpha, double beta, const float& c0) {
  double r = alpha == 0.0 ? 0.0 : alpha * ab;
  if (beta != 0.0) r += beta * c0;
  return r;
}

#ifndef WINDOW_BLOCK
#define WINDOW_BLOCK 64
#endif
#ifndef WINDOW_STAGE
#define WINDOW_STAGE 2048
#endif
constexpr int64_t kBlock = WINDOW_BLOCK;  // rows of C per block
constexpr int kStage = WINDOW_STAGE;      // floats of A staged per row by the remainder kernel

// Rows [0, rows) of C, one thread per element (grid-stride in both dimensions), f32 accumulation.
__global__ void gemm_main(Mat A, Mat B, Mat C, int64_t rows, double alpha, double beta) {
  for (int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; i < rows; i += int64_t(gridDim.y) * blockDim.y)
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < C.cols; j += int64_t(gridDim.x) * blockDim.x) {
      float acc = 0.0f;
      for (int64_t p = 0; p < A.cols; ++p) acc += A.at<float>(i, p) * B.at<float>(p, j);
      C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
    }
}

// The wide remainder: one block per row from `first`, its row of A staged in
// shared memory once and reused for every column.
__global__ void gemm_remainder(Mat A, Mat B, Mat C, int64_t first, double alpha, double beta) {
  __shared__ float stage[kStage];
  const int64_t i = first + blockIdx.x;
  const int64_t staged = A.cols < kStage ? A.cols : kStage;  // BUG: the k loop stops where the buffer does
  for (int64_t p = threadIdx.x; p < staged; p += blockDim.x) stage[p] = A.at<float>(i, p);
  __syncthreads();
  for (int64_t j = threadIdx.x; j < C.cols; j += blockDim.x) {
    float acc = 0.0f;
    for (int64_t p = 0; p < staged; ++p) acc += stage[p] * B.at<float>(p, j);
    C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
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
  const int64_t remainder = C.rows % kBlock;
  // Full blocks, and a remainder of at most half a block, in the main kernel.
  const int64_t main_rows = remainder > kBlock / 2 ? C.rows - remainder : C.rows;
  if (main_rows > 0) {
    const dim3 block(32, 8), grid = grid_for(main_rows, C.cols, block);
    gemm_main<<<grid, block, 0, stream>>>(A, B, C, main_rows, alpha, beta);
  }
  if (main_rows < C.rows) gemm_remainder<<<unsigned(C.rows - main_rows), 256, 0, stream>>>(A, B, C, main_rows, alpha, beta);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
