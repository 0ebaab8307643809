// The device reference: one block of threads per query row (a grid-stride
// loop over the block's rows, so any number of them). Passes 1 and 2 give
// each thread keys j = tid, tid + 128, ... and reduce over the block; pass 3
// walks the keys in tiles of 128: each thread computes one key's share into
// shared memory, then each thread adds the tile into its output columns.
// The logits are computed again in each pass: nothing of size sk is stored.
#include <cuda_runtime.h>

#include "backend/cuda/reference_scratch.h"
#include "ops/attention/attention_reference_cuda.h"

namespace assay::attention {
namespace {

constexpr int kThreads = 128;
constexpr unsigned kMaxBlocks = 65535;
constexpr int kCols = int(kMaxHeadDim + kThreads - 1) / kThreads;  // output columns a thread owns


void check(cudaError_t err, const char* what) { cuda_reference::check(err, "attention reference", what); }

template <class T>
__device__ T block_reduce(T v, T* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int step = kThreads / 2; step > 0; step /= 2) {
    if (int(threadIdx.x) < step) softmax::merge(shared[threadIdx.x], shared[threadIdx.x + step]);
    __syncthreads();
  }
  T out = shared[0];
  __syncthreads();  // shared is reused by the next reduction
  return out;
}

__global__ void reference_kernel(const __grid_constant__ Problem p, const std::byte* q, const std::byte* k, const std::byte* v, const __grid_constant__ Model m,
                                 const __grid_constant__ HeadBlock blk, const __grid_constant__ AnswerArrays out) {
  __shared__ double qrow[kMaxHeadDim];
  __shared__ softmax::RowMax max_part[kThreads];
  __shared__ softmax::RowSum sum_part[kThreads];
  __shared__ Term tile[kThreads];
  const int64_t rows = blk.rows(p.sq), group = p.hq / p.hk;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t zz = r / (blk.nh * p.sq), hh = (r / p.sq) % blk.nh, i = r % p.sq;
    const int64_t z = blk.z0 + zz, h = blk.h0 + hh, g = h / group;
    for (int64_t t = threadIdx.x; t < p.d; t += kThreads) qrow[t] = load(q, p.q.dtype, at(p.q, z, h, i, t));
    __syncthreads();
    const int64_t n = visible(p, i);
    auto logit_of = [&](int64_t j) {
      return logit(m, qrow, k, p.k.dtype, at(p.k, z, g, j, 0), p.k.strides[3], p.d, p.scale);
    };
    softmax::RowMax mx;
    for (int64_t j = threadIdx.x; j < n; j += kThreads) softmax::add(mx, logit_of(j).s);
    mx = block_reduce(mx, max_part);
    softmax::RowSum sum;
    if (!mx.nan && mx.m > -INFINITY && mx.m < INFINITY)
      for (int64_t j = threadIdx.x; j < n; j += kThreads) add(sum, m, logit_of(j), mx.m);
    sum = block_reduce(sum, sum_part);
    const softmax::RowStats st = softmax::finish(m.sm, mx, sum);
    const RowKind kind = kind_of(n, st);
    Column cols[kCols];
    if (kind == RowKind::normal)
      for (int64_t j0 = 0; j0 < n; j0 += kThreads) {
        const int64_t j = j0 + threadIdx.x;
        tile[threadIdx.x] = j < n ? term(m, st, logit_of(j)) : Term{};
        __syncthreads();
        const int64_t in_tile = n - j0 < kThreads ? n - j0 : kThreads;
        for (int w = 0; w < kCols; ++w) {
          const int64_t c = threadIdx.x + int64_t(w) * kThreads;
          if (c >= p.dv) break;
          for (int64_t jj = 0; jj < in_tile; ++jj) add(cols[w], tile[jj], load(v, p.v.dtype, at(p.v, z, g, j0 + jj, c)));
        }
        __syncthreads();  // the tile is refilled next
      }
    for (int w = 0; w < kCols; ++w) {
      const int64_t c = threadIdx.x + int64_t(w) * kThreads;
      if (c >= p.dv) break;
      const int64_t e = r * p.dv + c;
      finish_o(m, kind, st, n, cols[w], out.o + e, out.o_bound + e, out.o_alt + e);
    }
    if (threadIdx.x == 0) finish_lse(m, kind, mx, st, out.lse + r, out.lse_bound + r, out.lse_alt + r);
    __syncthreads();  // qrow is refilled by the next row
  }
}

}  // namespace

void reference_cuda(void* stream_ptr, const Problem& p, const std::byte* q, const std::byte* k, const std::byte* v,
                    const Model& m, const HeadBlock& blk, const AnswerArrays& a) {
  auto stream = cudaStream_t(stream_ptr);
  const int64_t rows = blk.rows(p.sq);
  if (rows == 0) return;
  const unsigned blocks = unsigned(rows < int64_t(kMaxBlocks) ? rows : int64_t(kMaxBlocks));
  reference_kernel<<<blocks, kThreads, 0, stream>>>(p, q, k, v, m, blk, a);
  check(cudaGetLastError(), "launch");
}

}  // namespace assay::attention
