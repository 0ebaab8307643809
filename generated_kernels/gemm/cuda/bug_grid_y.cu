// PLANTED BUG (field-notes 2.4, grid dimensions beyond 65,535 in y): naive f32
// GEMM launched with one 16x16 block per 16x16 tile of C, gridDim.y = ceil(m/16)
// uncapped and no grid-stride loop, and it returns ASSAY_OK without checking
// the launch. For m > 1,048,560 the launch itself fails (gridDim.y > 65535)
// and C is never computed; every smaller m is right.
// Expected verdict: cuda_error (the launch error, seen by the worker: candidates
// are built with -cudart shared). Built with a static cudart of its own, the
// error stayed inside the candidate and the verdict was unwritten_output.
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

__global__ void gemm_one_per_thread(Mat A, Mat B, Mat C, double alpha, double beta) {
  const int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y, j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= C.rows || j >= C.cols) return;
  float acc = 0.0f;
  for (int64_t p = 0; p < A.cols; ++p) acc += A.at<float>(i, p) * B.at<float>(p, j);
  C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
}

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A = view(call->inputs[0]), B = view(call->inputs[1]), C = view(call->outputs[0]);
  const auto stream = static_cast<cudaStream_t>(call->stream);
  if (C.rows == 0 || C.cols == 0) return ASSAY_OK;
  const dim3 block(16, 16), grid(unsigned((C.cols + 15) / 16), unsigned((C.rows + 15) / 16));  // BUG: y uncapped
  gemm_one_per_thread<<<grid, block, 0, stream>>>(A, B, C, call->scalars[0], call->scalars[1]);
  return ASSAY_OK;  // BUG: the launch error is never looked at
}
