// PLANTED BUG (field-notes 2.14, cached results keyed on a partial input
// fingerprint): naive f32 GEMM (f32 accumulation, double epilogue) that
// memoizes its last output, kept in device memory, under a "content
// fingerprint": the shape, strides and offsets, alpha and beta, and the bits
// of 32 evenly spaced elements of A and of B (logical element i*count/32,
// i = 0..31, row-major order; only when alpha != 0), plus 32 of C0 when
// beta != 0. A small gather kernel reads the samples on the call's stream and
// one copy brings them to the host. Any fresh draw changes some sampled
// element, so calls with new inputs miss the cache; a change of a few
// elements between the samples does not, and replays the previous output.
// Expected verdict: cached_result.
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

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

__global__ void gemm_naive(Mat A, Mat B, Mat C, double alpha, double beta) {
  for (int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; i < C.rows; i += int64_t(gridDim.y) * blockDim.y)
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < C.cols; j += int64_t(gridDim.x) * blockDim.x) {
      float acc = 0.0f;
      if (alpha != 0.0)
        for (int64_t p = 0; p < A.cols; ++p) acc += A.at<float>(i, p) * B.at<float>(p, j);
      C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
    }
}

// Copies between C (strided) and a dense row-major m x n buffer.
__global__ void copy_c(Mat C, float* dense, bool to_dense) {
  for (int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; i < C.rows; i += int64_t(gridDim.y) * blockDim.y)
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < C.cols; j += int64_t(gridDim.x) * blockDim.x) {
      float& d = dense[i * C.cols + j];
      if (to_dense) d = C.at<float>(i, j);
      else C.at<float>(i, j) = d;
    }
}

constexpr int kSamples = 32;

// Thread t < 3 * kSamples reads sample t % kSamples of tensor t / kSamples (A,
// B, C) when that tensor is sampled (on[x]) and not empty: logical
// element i*count/32 in row-major order. out[t] gets its bits, or 0.
struct Sampled {
  Mat t[3];
  bool on[3];
};
__global__ void gather(Sampled s, uint32_t* out) {
  const int t = threadIdx.x, x = t / kSamples, i = t % kSamples;
  if (x >= 3) return;
  const Mat& m = s.t[x];
  const int64_t count = m.rows * m.cols;
  uint32_t bits = 0;
  if (s.on[x] && count > 0) {
    const int64_t e = i * count / kSamples;
    bits = __float_as_uint(m.at<float>(e / m.cols, e % m.cols));  // bits, so NaNs compare too
  }
  out[t] = bits;
}

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const Mat A = view(call->inputs[0]), B = view(call->inputs[1]), C = view(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  const auto stream = static_cast<cudaStream_t>(call->stream);
  if (C.rows == 0 || C.cols == 0) return ASSAY_OK;

  // The fingerprint: scalars, geometry, then the samples read in stream order.
  std::vector<uint64_t> key(2);
  std::memcpy(key.data(), call->scalars, 2 * sizeof(double));
  for (int x = 0; x < 3; ++x) {
    const DLTensor& t = x < 2 ? call->inputs[x] : call->outputs[0];
    const Mat m = view(t);
    for (int64_t v : {m.rows, m.cols, m.rs, m.cs, int64_t(t.byte_offset)}) key.push_back(uint64_t(v));
  }
  static uint32_t* samples_dev = nullptr;  // 3 * kSamples, kept between calls
  if (!samples_dev && cudaMalloc(&samples_dev, 3 * kSamples * sizeof(uint32_t)) != cudaSuccess) return 2;
  const Sampled s{{A, B, C}, {alpha != 0.0, alpha != 0.0, beta != 0.0}};
  gather<<<1, 3 * kSamples, 0, stream>>>(s, samples_dev);
  uint32_t samples[3 * kSamples];
  if (cudaMemcpyAsync(samples, samples_dev, sizeof samples, cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess)
    return 2;
  key.insert(key.end(), samples, samples + 3 * kSamples);

  const dim3 block(32, 8), grid = grid_for(C.rows, C.cols, block);
  static std::vector<uint64_t> saved_key;
  static float* saved = nullptr;  // device, m x n row-major
  if (saved && key == saved_key) {  // BUG: 32 samples say nothing about the other elements
    copy_c<<<grid, block, 0, stream>>>(C, saved, false);
    return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
  }
  if (saved) cudaFreeAsync(saved, stream);
  saved = nullptr;
  saved_key.clear();
  if (cudaMallocAsync(&saved, C.rows * C.cols * sizeof(float), stream) != cudaSuccess) return 2;
  saved_key = key;
  gemm_naive<<<grid, block, 0, stream>>>(A, B, C, alpha, beta);
  copy_c<<<grid, block, 0, stream>>>(C, saved, true);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
