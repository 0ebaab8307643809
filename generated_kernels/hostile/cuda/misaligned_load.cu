// HOSTILE (field-notes 2.2, alignment bugs): naive f32 GEMM with a fast path
// for row-major A and k % 4 == 0 that reads each row of A with 16-byte float4
// loads. It checks the layout and k but not the alignment: the data start is
// 256-byte aligned, but a base offset (DLTensor byte_offset) or a leading
// dimension that is not a multiple of 4 elements puts the row starts off a
// 16-byte boundary, and a misaligned vector load faults
// (cudaErrorMisalignedAddress, sticky: the CUDA context is dead). The harness
// draws such layouts (offset by one element, padded rows); the spec does not
// declare `requires: aligned(A, 16)`, on purpose. A checker that passes only
// fresh compact tensors (cudaMalloc'd, ld == k) passes it; one that runs
// candidates in its own process loses the GPU for every later kernel. Correct
// (bit for bit the naive order) whenever the rows are aligned.
// Needs the out-of-process worker (issue #3). Expected verdict: crash.
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

// One thread per element of C; vec4: A is row-major and k % 4 == 0.
__global__ void gemm_vec4(Mat A, Mat B, Mat C, double alpha, double beta, bool vec4) {
  for (int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; i < C.rows; i += int64_t(gridDim.y) * blockDim.y)
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < C.cols; j += int64_t(gridDim.x) * blockDim.x) {
      float acc = 0.0f;
      if (vec4) {
        // BUG: assumes &A(i, 0) is 16-byte aligned; nothing checks offset(A) or ld(A).
        const float4* row = reinterpret_cast<const float4*>(&A.at<float>(i, 0));
        for (int64_t q = 0; q < A.cols / 4; ++q) {
          const float4 a = row[q];
          acc += a.x * B.at<float>(4 * q, j);
          acc += a.y * B.at<float>(4 * q + 1, j);
          acc += a.z * B.at<float>(4 * q + 2, j);
          acc += a.w * B.at<float>(4 * q + 3, j);
        }
      } else {
        for (int64_t p = 0; p < A.cols; ++p) acc += A.at<float>(i, p) * B.at<float>(p, j);
      }
      C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
    }
}

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A = view(call->inputs[0]), B = view(call->inputs[1]), C = view(call->outputs[0]);
  const auto stream = static_cast<cudaStream_t>(call->stream);
  if (C.rows == 0 || C.cols == 0) return ASSAY_OK;
  const bool vec4 = A.cs == 1 && A.cols % 4 == 0;  // BUG: no check of A's base or row alignment
  const dim3 block(32, 8), grid = grid_for(C.rows, C.cols, block);
  gemm_vec4<<<grid, block, 0, stream>>>(A, B, C, call->scalars[0], call->scalars[1], vec4);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
