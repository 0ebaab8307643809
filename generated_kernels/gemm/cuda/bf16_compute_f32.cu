// Correct cuda kernel under `compute: bf16`: one thread per element of C
// converts every A and B element to bfloat16 with __float2bfloat16_rn (round
// to nearest even; subnormals kept on bf16's grid, 2^-133, values past
// (2 - 2^-7) 2^127 to +-Inf, NaN stays NaN); the products of the widened bf16
// values are exact in f32 (8 x 8 bits, but for underflow) and summed in f32 in
// ascending k (one FMA each); the epilogue runs in double and rounds once to
// f32. 64-bit indexing, grid-stride loops; any m, n, k, strides and base
// offsets.
// Expected verdict: pass.
#include <assay/abi.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>

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

__device__ float to_bf16(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

__global__ void gemm_bf16_compute(Mat A, Mat B, Mat C, double alpha, double beta) {
  for (int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; i < C.rows; i += int64_t(gridDim.y) * blockDim.y)
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < C.cols; j += int64_t(gridDim.x) * blockDim.x) {
      float acc = 0.0f;
      if (alpha != 0.0)
        for (int64_t p = 0; p < A.cols; ++p) acc = fmaf(to_bf16(A.at<float>(i, p)), to_bf16(B.at<float>(p, j)), acc);
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
  const dim3 block(32, 8), grid = grid_for(C.rows, C.cols, block);
  gemm_bf16_compute<<<grid, block, 0, stream>>>(A, B, C, alpha, beta);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
