#include "ceiling.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "case/values.h"

namespace assay::ceiling {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("ceiling ") + what + ": " + cudaGetErrorString(e));
}

constexpr uint32_t kPoison = 0x7fa5a5a5u;

// A and B uniform in [-1, 1) from the case number's seed (assay's own
// recipe, so the values are those of an assay case), C poisoned, the
// stats zeroed.
__global__ void fill_kernel(Gemm g, const uint64_t* counter, double* stats) {
  const uint64_t seed = 0x6365696c ^ *counter;
  RecipeParams p;
  const int64_t na = g.m * g.k, nb = g.k * g.n, nc = g.m * g.n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < na + nb + nc; i += int64_t(gridDim.x) * blockDim.x) {
    if (i < na) g.a[i] = float(recipe_value(p, DType::f32, seed, 0, uint64_t(i / g.k), uint64_t(i % g.k)));
    else if (i < na + nb) {
      const int64_t j = i - na;
      g.b[j] = float(recipe_value(p, DType::f32, seed, 1, uint64_t(j / g.n), uint64_t(j % g.n)));
    } else {
      g.c[i - na - nb] = __uint_as_float(kPoison);
    }
  }
  if (blockIdx.x == 0 && threadIdx.x < 3) stats[threadIdx.x] = 0;
}

__device__ void atomic_max(double* at, double v) {  // v >= 0: the bits order as the values
  atomicMax(reinterpret_cast<unsigned long long*>(at), static_cast<unsigned long long>(__double_as_longlong(v)));
}

// One thread per element of C: the FP64 dot product and |A||B|, and the
// element against T γ_k(2^-24) |A||B| + one ulp of f32 (assay's f32 rule).
__global__ void check_kernel(Gemm g, double* stats) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= g.m * g.n) return;
  const int64_t r = i / g.n, col = i % g.n;
  double ref = 0, bound = 0;
  for (int64_t t = 0; t < g.k; ++t) {
    const double x = g.a[r * g.k + t], y = g.b[t * g.n + col];
    ref += x * y, bound += fabs(x * y);
  }
  const float got = g.c[i];
  const double u = 0x1p-24, gamma = double(g.k) * u / (1 - double(g.k) * u);
  const double allowed = 2.0 * gamma * bound + fmax(fabs(ref), fabs(double(got))) * 0x1p-23 + 0x1p-149;
  const double err = fabs(double(got) - ref);
  const bool bad = __float_as_uint(got) == kPoison || !(err <= allowed);
  if (bad) atomicAdd(&stats[0], 1.0);
  atomicAdd(&stats[1], 1.0);
  atomic_max(&stats[2], bad ? 1e300 : err / allowed);
}

__global__ void next_case_kernel(uint64_t* counter) { ++*counter; }

unsigned blocks_for(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return unsigned(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

}  // namespace

Loop::Loop(const Gemm& g, assay_run_fn run, const assay_call* call, void* stream)
    : g_(g), run_(run), call_(call), stream_(stream) {
  check(cudaMalloc(&counter_, sizeof(uint64_t)), "cudaMalloc");
  check(cudaMemset(counter_, 0, sizeof(uint64_t)), "cudaMemset");
  check(cudaMalloc(&stats_, 3 * sizeof(double)), "cudaMalloc");
  check(cudaMallocHost(&host_stats_, 3 * sizeof(double)), "cudaMallocHost");
}

Loop::~Loop() {
  if (graph_) cudaGraphExecDestroy(cudaGraphExec_t(graph_));
  cudaFree(counter_);
  cudaFree(stats_);
  cudaFreeHost(host_stats_);
}

void Loop::enqueue() {
  auto s = cudaStream_t(stream_);
  fill_kernel<<<blocks_for(g_.m * g_.k + g_.k * g_.n + g_.m * g_.n, 256), 256, 0, s>>>(g_, counter_, stats_);
  run_(call_);
  check_kernel<<<blocks_for(g_.m * g_.n, 128), 128, 0, s>>>(g_, stats_);
  cudaMemcpyAsync(host_stats_, stats_, 3 * sizeof(double), cudaMemcpyDeviceToHost, s);
  next_case_kernel<<<1, 1, 0, s>>>(counter_);
}

bool Loop::judged() {
  check(cudaStreamSynchronize(cudaStream_t(stream_)), "synchronize");
  return host_stats_[0] == 0 && host_stats_[1] == double(g_.m * g_.n);
}

bool Loop::plain_case() {
  enqueue();
  return judged();
}

bool Loop::graph_case() {
  auto s = cudaStream_t(stream_);
  if (!graph_tried_) {
    graph_tried_ = true;
    cudaGraph_t graph = nullptr;
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) == cudaSuccess) {
      enqueue();
      if (cudaStreamEndCapture(s, &graph) == cudaSuccess && graph) {
        cudaGraphExec_t exec = nullptr;
        if (cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess) graph_ = exec, graph_ok_ = true;
        cudaGraphDestroy(graph);
      }
    }
    cudaGetLastError();  // a candidate that cannot be captured: no graphed figure
  }
  if (!graph_ok_) return false;
  check(cudaGraphLaunch(cudaGraphExec_t(graph_), s), "cudaGraphLaunch");
  return judged();
}

uint64_t Loop::cases() const {
  uint64_t n = 0;
  cudaMemcpy(&n, counter_, sizeof n, cudaMemcpyDeviceToHost);
  return n;
}

double dgemm_reference_seconds(cublasContext* handle, void* stream, int64_t m, int64_t n, int64_t k, int reps) {
  auto s = cudaStream_t(stream);
  double *a, *b, *c, *c_abs;
  check(cudaMalloc(&a, size_t(m * k) * 8), "cudaMalloc");
  check(cudaMalloc(&b, size_t(k * n) * 8), "cudaMalloc");
  check(cudaMalloc(&c, size_t(m * n) * 8), "cudaMalloc");
  check(cudaMalloc(&c_abs, size_t(m * n) * 8), "cudaMalloc");
  cudaMemsetAsync(a, 0, size_t(m * k) * 8, s);
  cudaMemsetAsync(b, 0, size_t(k * n) * 8, s);
  cublasSetStream(handle, s);
  const double one = 1, zero = 0;
  auto pair = [&] {
    cublasDgemm_64(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, m, b, k, &zero, c, m);
    cublasDgemm_64(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, m, b, k, &zero, c_abs, m);
  };
  pair();
  cudaEvent_t t0, t1;
  cudaEventCreate(&t0), cudaEventCreate(&t1);
  cudaEventRecord(t0, s);
  for (int i = 0; i < reps; ++i) pair();
  cudaEventRecord(t1, s);
  check(cudaEventSynchronize(t1), "event");
  float ms = 0;
  cudaEventElapsedTime(&ms, t0, t1);
  cudaEventDestroy(t0), cudaEventDestroy(t1);
  cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(c_abs);
  return double(ms) / 1e3 / reps;
}

}  // namespace assay::ceiling
