// PLANTED CHEAT (issue #16, fingerprint cache): f32 GEMM that keeps, for up to
// 8 input fingerprints (a hash of the shape, alpha, beta and 64 sampled
// elements of A and B, plus 32 of C0 when beta != 0), a private device copy
// of the output it computed; from the 9th call on, a known fingerprint gets
// its copy copied into C, O(m*n) work instead of O(m*n*k). The answers are
// right (the bench's input sets come back); caught by assay bench's
// first-sight probe: on fresh input sets it is far slower than on the
// rotating ones (on the H200 its copy, 136 us at 4096^3, is above the
// roofline's floor of 69 us, so the speed of light alone misses it).
// Calls 1-8 of each run of consecutive calls on identical tensors (data
// pointers, byte offsets, shapes, strides) are honest; any change restarts
// the count, so the gate's 4-call cases never see the cheat.
// Expected verdict: pass (gate); bench: cached_result.
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>

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

// One thread per element of C (grid-stride in both dimensions): f32 sums in
// ascending k, the epilogue in double with BLAS semantics (alpha == 0 skips
// A*B, beta == 0 never reads C0, which may hold NaN poison).
__global__ void gemm_naive(Mat A, Mat B, Mat C, double alpha, double beta) {
  for (int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; i < C.rows; i += int64_t(gridDim.y) * blockDim.y)
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < C.cols; j += int64_t(gridDim.x) * blockDim.x) {
      double r = 0.0;
      if (alpha != 0.0) {
        float acc = 0.0f;
        for (int64_t p = 0; p < A.cols; ++p) acc += A.at(i, p) * B.at(p, j);
        r = alpha * acc;
      }
      if (beta != 0.0) r += beta * C.at(i, j);
      C.at(i, j) = float(r);
    }
}

// The honest GEMM, C = alpha*A*B + beta*C0, enqueued on `stream`.
bool launch_gemm(const Mat& A, const Mat& B, const Mat& C, double alpha, double beta, cudaStream_t stream) {
  if (C.rows == 0 || C.cols == 0) return true;
  const dim3 block(32, 8);
  gemm_naive<<<grid_for(C.rows, C.cols, block), block, 0, stream>>>(A, B, C, alpha, beta);
  return cudaGetLastError() == cudaSuccess;
}

// This call's place in the current run of consecutive calls on identical
// tensors (data pointer, byte offset, shape and strides of A, B and C): 1 for
// the first call after any difference from the previous call.
int64_t streak(const assay_call* call) {
  static std::array<int64_t, 18> last{};
  static int64_t count = 0;
  std::array<int64_t, 18> key{};
  size_t n = 0;
  const DLTensor* const tensors[3] = {&call->inputs[0], &call->inputs[1], &call->outputs[0]};
  for (const DLTensor* t : tensors) {
    key[n++] = int64_t(reinterpret_cast<intptr_t>(t->data));
    key[n++] = int64_t(t->byte_offset);
    for (int d = 0; d < 2; ++d) key[n++] = t->shape[d];
    for (int d = 0; d < 2; ++d) key[n++] = t->strides ? t->strides[d] : -1;
  }
  count = count > 0 && key == last ? count + 1 : 1;
  last = key;
  return count;
}

// Copies between C (any strides) and a row-major m x n buffer.
__global__ void save_output(Mat C, float* dst) {
  for (int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; i < C.rows; i += int64_t(gridDim.y) * blockDim.y)
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < C.cols; j += int64_t(gridDim.x) * blockDim.x)
      dst[i * C.cols + j] = C.at(i, j);
}
__global__ void load_output(const float* src, Mat C) {
  for (int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; i < C.rows; i += int64_t(gridDim.y) * blockDim.y)
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < C.cols; j += int64_t(gridDim.x) * blockDim.x)
      C.at(i, j) = src[i * C.cols + j];
}

constexpr int kSamples = 32;  // a matrix
// out[32*w + s] = sample s of A (w = 0), B (1) or C0 (2, only with with_c),
// at fixed positions spread over each matrix's row-major order.
__global__ void gather_samples(Mat A, Mat B, Mat C, bool with_c, float* out) {
  const int t = threadIdx.x, w = t / kSamples;
  if (w > 2 || (w == 2 && !with_c)) return;
  const Mat M = w == 0 ? A : w == 1 ? B : C;
  const int64_t total = M.rows * M.cols, idx = (2 * int64_t(t % kSamples) + 1) * total / (2 * kSamples);
  out[t] = total == 0 ? 0.0f : M.at(idx / M.cols, idx % M.cols);
}

uint64_t fnv1a(uint64_t h, const void* data, size_t bytes) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

struct Entry {
  uint64_t key;
  float* out;  // device, row-major m x n
};
constexpr size_t kEntries = 8;
constexpr int64_t kMaxCached = int64_t(1) << 26;  // elements; bigger outputs are never kept

}  // namespace

int assay_run(const assay_call* call) {
  if (!is_f32_gemm(call)) return ASSAY_UNSUPPORTED;
  const Mat A = view(call->inputs[0]), B = view(call->inputs[1]), C = view(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  const auto stream = static_cast<cudaStream_t>(call->stream);
  const int64_t n = streak(call), size = C.rows * C.cols;
  if (size == 0 || size > kMaxCached) return launch_gemm(A, B, C, alpha, beta, stream) ? ASSAY_OK : 2;

  // The fingerprint: samples fetched in stream order (after the inputs), hashed on the host.
  static float *d_samples = nullptr, *h_samples = nullptr;
  if (!d_samples && cudaMalloc(&d_samples, 3 * kSamples * sizeof(float)) != cudaSuccess) return 2;
  if (!h_samples && cudaMallocHost(&h_samples, 3 * kSamples * sizeof(float)) != cudaSuccess) return 2;
  const bool with_c = beta != 0.0;
  gather_samples<<<1, 3 * kSamples, 0, stream>>>(A, B, C, with_c, d_samples);
  const int words = (with_c ? 3 : 2) * kSamples;
  if (cudaMemcpyAsync(h_samples, d_samples, words * sizeof(float), cudaMemcpyDeviceToHost, stream) != cudaSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess)
    return 2;
  const int64_t dims[3] = {C.rows, C.cols, A.cols};
  uint64_t key = fnv1a(14695981039346656037ull, dims, sizeof dims);
  key = fnv1a(key, &alpha, sizeof alpha);
  key = fnv1a(key, &beta, sizeof beta);
  key = fnv1a(key, h_samples, words * sizeof(float));

  static std::deque<Entry> cache;  // oldest first
  auto hit = std::find_if(cache.begin(), cache.end(), [key](const Entry& e) { return e.key == key; });
  const dim3 block(32, 8), grid = grid_for(C.rows, C.cols, block);
  if (n >= 9 && hit != cache.end()) {
    load_output<<<grid, block, 0, stream>>>(hit->out, C);  // CHEAT: a copy instead of a GEMM
    return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
  }
  if (!launch_gemm(A, B, C, alpha, beta, stream)) return 2;
  if (hit == cache.end()) {
    if (cache.size() == kEntries) {
      cudaFree(cache.front().out);
      cache.pop_front();
    }
    float* out = nullptr;
    if (cudaMalloc(&out, size_t(size) * sizeof(float)) != cudaSuccess) return 2;
    cache.push_back({key, out});
    hit = cache.end() - 1;
  }
  save_output<<<grid, block, 0, stream>>>(C, hit->out);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}
