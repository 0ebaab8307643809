// HOSTILE (field-notes 2.5, loop-bound bugs: an infinite loop when k == 0):
// naive f32 GEMM, one thread per element of C, that walks k in panels of up to
// KC = 64, panel depth kc = min(KC, k). The first panel applies the epilogue
// (beta*C0), the later ones add alpha*A*B(panel) to C. So that k == 0 still
// writes C = beta*C0, the panel loop runs "at least once": p0 < max(k, 1). But
// the step is kc, 0 when k == 0, so p0 never moves and every thread spins
// forever: the kernel never finishes and neither does the synchronize after
// it. Correct for every k > 0; nothing out of bounds is touched while it
// spins. p0 is volatile, so the compiler keeps the loop. A checker without
// k == 0 cases passes it; one that runs candidates in its own process and
// without a timeout hangs with the GPU.
// Needs the out-of-process worker (issue #3). Expected verdict: hang.
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

constexpr int64_t KC = 64;

__global__ void gemm_panels(Mat A, Mat B, Mat C, double alpha, double beta) {
  const int64_t k = A.cols, kc = k < KC ? k : KC;
  for (int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; i < C.rows; i += int64_t(gridDim.y) * blockDim.y)
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < C.cols; j += int64_t(gridDim.x) * blockDim.x) {
      float& c = C.at<float>(i, j);
      // BUG: kc == 0 when k == 0, so p0 += kc never reaches max(k, 1).
      for (volatile int64_t p0 = 0; p0 < (k > 1 ? k : 1); p0 += kc) {
        const int64_t p_begin = p0, p_end = p_begin + kc < k ? p_begin + kc : k;
        float acc = 0.0f;
        for (int64_t p = p_begin; p < p_end; ++p) acc += A.at<float>(i, p) * B.at<float>(p, j);
        if (p_begin == 0)
          c = float(combine(acc, alpha, beta, c));  // alpha*A*B(panel) + beta*C0
        else if (alpha != 0.0)
          c = float(c + alpha * double(acc));
      }
    }
}

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A = view(call->inputs[0]), B = view(call->inputs[1]), C = view(call->outputs[0]);
  const auto stream = static_cast<cudaStream_t>(call->stream);
  if (C.rows == 0 || C.cols == 0) return ASSAY_OK;
  const dim3 block(32, 8), grid = grid_for(C.rows, C.cols, block);
  gemm_panels<<<grid, block, 0, stream>>>(A, B, C, call->scalars[0], call->scalars[1]);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
