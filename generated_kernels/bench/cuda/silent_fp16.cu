// PLANTED CHEAT (issue #16, silent half precision): f32 GEMM that, from its
// first call on, converts every A and B element to half (__float2half_rn)
// and back before multiplying, summing in f32, while its spec claims compute
// f32. Caught before any timing: at small k by
// the gate's per-element bound; at the benched k of thousands, where that
// bound admits half's errors, by the RMS rule of the bench's judged calls
// (docs/tolerance.md, "The aggregate precision rule").
// Expected verdict: mismatch (gate); bench: mismatch.
#include <assay/abi.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace {

// A 2-D DLTensor in device memory: element (r, c) lives at base + (r*rs + c*cs) elements.
struct Mat {
  char* base;
  int64_t rows, cols, rs, cs;
  __device__ float& at(int64_t r, int64_t c) const { return reinterpret_cast<float*>(base)[r * rs + c * cs]; }
};
Mat view(const DLTensor& t) {
  return {static_cast<char*>(t.data) + t.byte_offset, t.shape[0], t.shape[1], t.strides ? t.strides[0] : t.shape[1],
          t.strides ? t.strides[1] : 1};
}

bool is_f32_matrix(const DLTensor& t) {
  return t.ndim == 2 && t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1;
}
// True when the call is an f32 GEMM: inputs {A, B}, output {C}, scalars {alpha, beta}.
bool is_f32_gemm(const assay_call* call) {
  return call->num_inputs == 2 && call->num_outputs == 1 && call->num_scalars == 2 &&
         is_f32_matrix(call->inputs[0]) && is_f32_matrix(call->inputs[1]) && is_f32_matrix(call->outputs[0]);
}

// A 2-D grid of `block`s over rows x cols, each dimension capped at 65535
// blocks; the kernels stride over whatever the grid does not cover.
dim3 grid_for(int64_t rows, int64_t cols, dim3 block) {
  auto cap = [](int64_t len, unsigned b) { return unsigned(std::min<int64_t>((len + b - 1) / b, 65535)); };
  return dim3(cap(cols, block.x), cap(rows, block.y));
}

__device__ float half_of(float x) { return __half2float(__float2half_rn(x)); }

// One thread per element of C (grid-stride in both dimensions), the epilogue
// in double with BLAS semantics (alpha == 0 skips A*B, beta == 0 never reads C0).
__global__ void gemm_half_inputs(Mat A, Mat B, Mat C, double alpha, double beta) {
  for (int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; i < C.rows; i += int64_t(gridDim.y) * blockDim.y)
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < C.cols; j += int64_t(gridDim.x) * blockDim.x) {
      double r = 0.0;
      if (alpha != 0.0) {
        float acc = 0.0f;  // CHEAT: the products see only half's precision and range
        for (int64_t p = 0; p < A.cols; ++p) acc += half_of(A.at(i, p)) * half_of(B.at(p, j));
        r = alpha * acc;
      }
      if (beta != 0.0) r += beta * C.at(i, j);
      C.at(i, j) = float(r);
    }
}

}  // namespace

int assay_run(const assay_call* call) {
  if (!is_f32_gemm(call)) return ASSAY_UNSUPPORTED;
  const Mat A = view(call->inputs[0]), B = view(call->inputs[1]), C = view(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  const auto stream = static_cast<cudaStream_t>(call->stream);
  if (C.rows == 0 || C.cols == 0) return ASSAY_OK;
  const dim3 block(32, 8);
  gemm_half_inputs<<<grid_for(C.rows, C.cols, block), block, 0, stream>>>(A, B, C, alpha, beta);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
