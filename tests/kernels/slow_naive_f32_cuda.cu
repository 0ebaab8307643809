// A correct but slow cuda kernel, for scripts/gpu-fuzz-bounds.sh: a naive
// f32 GEMM (one thread per element of C), then the launcher sleeps 1 us per
// multiply-add, so a case of 2^24 multiply-adds keeps its call for 17 s and
// a campaign is always in a call when its time runs out.
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <thread>

namespace {

struct Mat {
  float* base;
  int64_t rows, cols, rs, cs;
};

Mat mat(const DLTensor& t) {
  return {reinterpret_cast<float*>(static_cast<char*>(t.data) + t.byte_offset), t.shape[0], t.shape[1],
          t.strides ? t.strides[0] : t.shape[1], t.strides ? t.strides[1] : 1};
}

bool is_f32(const DLTensor& t) { return t.ndim == 2 && t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1; }

__global__ void gemm(Mat A, Mat B, Mat C, double alpha, double beta) {
  const int64_t count = C.rows * C.cols;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < count; e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = e / C.cols, j = e % C.cols;
    float acc = 0;
    for (int64_t p = 0; p < A.cols; ++p) acc += A.base[i * A.rs + p * A.cs] * B.base[p * B.rs + j * B.cs];
    double r = alpha == 0.0 ? 0.0 : alpha * acc;  // BLAS: alpha = 0 skips A*B, beta = 0 never reads C
    float& c = C.base[i * C.rs + j * C.cs];
    if (beta != 0.0) r += beta * c;
    c = float(r);
  }
}

}  // namespace

int assay_run(const assay_call* call) {
  if (call->num_inputs != 2 || call->num_outputs != 1 || call->num_scalars != 2 || !is_f32(call->inputs[0]) ||
      !is_f32(call->inputs[1]) || !is_f32(call->outputs[0]))
    return ASSAY_UNSUPPORTED;
  const Mat A = mat(call->inputs[0]), B = mat(call->inputs[1]), C = mat(call->outputs[0]);
  const int64_t count = C.rows * C.cols;
  if (count > 0) {
    const int64_t blocks = (count + 255) / 256;
    gemm<<<unsigned(blocks < 65536 ? blocks : 65536), 256, 0, cudaStream_t(call->stream)>>>(
        A, B, C, call->scalars[0], call->scalars[1]);
    if (cudaGetLastError() != cudaSuccess) return 2;  // any code but the two of the ABI is an error
  }
  std::this_thread::sleep_for(std::chrono::nanoseconds(C.rows * C.cols * A.cols * 1000));
  return ASSAY_OK;
}
