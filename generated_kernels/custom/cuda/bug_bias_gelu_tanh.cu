// PLANTED BUG (approximation shipped as the exact function): bias_gelu with the
// tanh approximation of GELU, 0.5 v (1 + tanh(sqrt(2/pi) (v + 0.044715 v^3))),
// where the op is the erf form. The two differ by up to about 5e-4 near
// |v| = 2 (far more than f32 rounding), so every case with values in the
// transition region |v| < ~4 is off. Special values behave like the erf form
// (+Inf -> +Inf, -Inf -> NaN, NaN -> NaN), so the difference is in finite values.
// Expected verdict: mismatch.
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

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
// A 1-D DLTensor in device memory: element i lives at base + i*stride elements.
struct Vec {
  char* base;
  int64_t len, stride;
  __device__ float& at(int64_t i) const { return reinterpret_cast<float*>(base)[i * stride]; }
};
Vec vec(const DLTensor& t) {
  return {static_cast<char*>(t.data) + t.byte_offset, t.shape[0], t.strides ? t.strides[0] : 1};
}

bool is_f32(const DLTensor& t, int ndim) {
  return t.ndim == ndim && t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1;
}
// True when the call is bias_gelu in f32: inputs {x [rows, n], bias [n]}, outputs {y [rows, n]}.
bool bias_gelu_of(const assay_call* call) {
  if (std::strcmp(call->op, "custom") != 0 || call->num_inputs != 2 || call->num_outputs != 1 ||
      call->num_scalars != 0)
    return false;
  const DLTensor &x = call->inputs[0], &b = call->inputs[1], &y = call->outputs[0];
  return is_f32(x, 2) && is_f32(b, 1) && is_f32(y, 2) && b.shape[0] == x.shape[1] && y.shape[0] == x.shape[0] &&
         y.shape[1] == x.shape[1];
}

// A 2-D grid of `block`s over rows x cols, each dimension capped at 65535 blocks;
// the kernel strides over whatever the grid does not cover.
dim3 grid_for(int64_t rows, int64_t cols, dim3 block) {
  auto cap = [](int64_t len, unsigned b) { return unsigned(std::min<int64_t>((len + b - 1) / b, 65535)); };
  return dim3(cap(cols, block.x), cap(rows, block.y));
}

__device__ float gelu(float v) {
  const float kSqrt2OverPi = 0.797884561f, kCubic = 0.044715f;
  return 0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + kCubic * v * v * v)));  // BUG: tanh approximation
}

__global__ void bias_gelu(Mat x, Vec bias, Mat y) {
  for (int64_t r = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; r < y.rows; r += int64_t(gridDim.y) * blockDim.y)
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < y.cols; j += int64_t(gridDim.x) * blockDim.x)
      y.at(r, j) = gelu(x.at(r, j) + bias.at(j));
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (!bias_gelu_of(call)) return ASSAY_UNSUPPORTED;
  const Mat x = view(call->inputs[0]), y = view(call->outputs[0]);
  const Vec bias = vec(call->inputs[1]);
  const auto stream = static_cast<cudaStream_t>(call->stream);
  if (y.rows == 0 || y.cols == 0) return ASSAY_OK;
  const dim3 block(32, 8), grid = grid_for(y.rows, y.cols, block);
  bias_gelu<<<grid, block, 0, stream>>>(x, bias, y);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
