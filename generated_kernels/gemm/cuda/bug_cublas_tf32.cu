// PLANTED BUG (field-notes 2.6, silent TF32 in an "fp32" kernel): the f32
// cuBLAS kernel of cublas_gemm.cu with one change, the handle's math mode
// set to CUBLAS_TF32_TENSOR_OP_MATH (what `allow_tf32 = True` does in a
// framework): cuBLAS may then round f32 inputs to TF32 on tensor cores, while
// the spec still claims compute f32. Small-integer data is exact in TF32 and
// passes; uniform data errs by about 2^-11 per product.
// Expected verdict: mismatch.
#include <assay/abi.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
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

// How X looks to column-major cuBLAS: X itself (op N, ld = column stride) when
// X is column-major, X^T (op T, ld = row stride) when it is row-major. The
// stride of a dimension of length 1 never matters. False without a unit stride.
struct Operand {
  const void* ptr;
  bool trans;
  int64_t ld;
};
bool as_blas(const Mat& x, Operand* o) {
  if (x.rs == 1 && (x.cols <= 1 || x.cs >= std::max<int64_t>(x.rows, 1))) {
    *o = {x.base, false, x.cols <= 1 ? std::max<int64_t>(x.rows, 1) : x.cs};
    return true;
  }
  if (x.cs == 1 && (x.rows <= 1 || x.rs >= std::max<int64_t>(x.cols, 1))) {
    *o = {x.base, true, x.rows <= 1 ? std::max<int64_t>(x.cols, 1) : x.rs};
    return true;
  }
  return false;
}
cublasOperation_t op(bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }

__device__ void store(float& c, double v) { c = float(v); }
__device__ void store(__half& c, double v) { c = __double2half(v); }
__device__ void store(__nv_bfloat16& c, double v) { c = __double2bfloat16(v); }

// k == 0 or alpha == 0: C = beta*C0, rounded once; beta == 0 writes zeros without reading C.
template <class T> __global__ void scale_c(Mat C, double beta) {
  for (int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; i < C.rows; i += int64_t(gridDim.y) * blockDim.y)
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < C.cols; j += int64_t(gridDim.x) * blockDim.x) {
      T& c = C.at<T>(i, j);
      store(c, beta == 0.0 ? 0.0 : beta * double(float(c)));
    }
}

// The author meant "fast f32"; TF32 is not f32.
const auto kMath = cublasMath_t(CUBLAS_TF32_TENSOR_OP_MATH);  // BUG: TF32 allowed under an f32 claim

cublasHandle_t handle() {  // one per process, created on first use
  static cublasHandle_t h = nullptr;
  if (!h && cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) h = nullptr;
  return h;
}

// C = alpha*A*B + beta*C0 with cuBLAS for element type T (cuBLAS type `ct`), f32 compute.
template <class T> int run(const assay_call* call, DLDataType dt, cudaDataType ct) {
  if (!gemm_of(call, dt, dt)) return ASSAY_UNSUPPORTED;
  const Mat A = view(call->inputs[0]), B = view(call->inputs[1]), C = view(call->outputs[0]);
  const int64_t m = C.rows, n = C.cols, k = A.cols;
  const auto stream = static_cast<cudaStream_t>(call->stream);
  if (m == 0 || n == 0) return ASSAY_OK;
  if (k == 0 || call->scalars[0] == 0.0) {  // A*B not referenced (cuBLAS's f16/bf16 paths would form 0*NaN)
    const dim3 block(32, 8);
    scale_c<T><<<grid_for(m, n, block), block, 0, stream>>>(C, call->scalars[1]);
    return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
  }
  Operand a, b, c;
  if (!as_blas(A, &a) || !as_blas(B, &b) || !as_blas(C, &c)) return ASSAY_UNSUPPORTED;
  cublasHandle_t h = handle();
  if (!h || cublasSetStream(h, stream) != CUBLAS_STATUS_SUCCESS ||
      cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST) != CUBLAS_STATUS_SUCCESS ||
      cublasSetMathMode(h, kMath) != CUBLAS_STATUS_SUCCESS)
    return 3;
  const float alpha = float(call->scalars[0]), beta = float(call->scalars[1]);
  cublasStatus_t s;
  if (!c.trans)  // C column-major: C = op(A) op(B)
    s = cublasGemmEx_64(h, op(a.trans), op(b.trans), m, n, k, &alpha, a.ptr, ct, a.ld, b.ptr, ct, b.ld, &beta,
                        C.base, ct, c.ld, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  else  // C row-major: C^T = B^T A^T, with every operand's transpose flipped
    s = cublasGemmEx_64(h, op(!b.trans), op(!a.trans), n, m, k, &alpha, b.ptr, ct, b.ld, a.ptr, ct, a.ld, &beta,
                        C.base, ct, c.ld, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return s == CUBLAS_STATUS_SUCCESS ? ASSAY_OK : 3;
}

}  // namespace

int assay_run(const assay_call* call) { return run<float>(call, {kDLFloat, 32, 1}, CUDA_R_32F); }
