// PLANTED BUG (field-notes 2.4, index overflow): naive f32 GEMM written with
// `int` everywhere: thread indices, strides and the element offsets
// i*lda + p and p*ldb + j. Right for every tensor below 2^31 elements; past
// that the offset wraps negative and the kernel reads far before the buffer.
// Only the sweep's cuda cases past 2^31 elements reach it.
// Expected verdict: crash (a sticky CUDA error in the worker, seen on the H200).
// happens to be mapped, mismatch instead).
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

__global__ void gemm_int32(const float* a, const float* b, float* c, int m, int n, int k, int lda_r, int lda_c,
                           int ldb_r, int ldb_c, int ldc_r, int ldc_c, double alpha, double beta) {
  for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < m; i += gridDim.y * blockDim.y)
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x) {
      float acc = 0.0f;
      for (int p = 0; p < k; ++p) acc += a[i * lda_r + p * lda_c] * b[p * ldb_r + j * ldb_c];  // BUG: 32-bit offsets
      float& out = c[i * ldc_r + j * ldc_c];
      out = float(combine(acc, alpha, beta, out));
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
  gemm_int32<<<grid, block, 0, stream>>>(reinterpret_cast<const float*>(A.base), reinterpret_cast<const float*>(B.base),
                                         reinterpret_cast<float*>(C.base), int(C.rows), int(C.cols), int(A.cols),
                                         int(A.rs), int(A.cs), int(B.rs), int(B.cs), int(C.rs), int(C.cs), alpha, beta);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
