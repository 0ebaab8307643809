// Visiting every element of a rows x cols matrix view from a kernel without
// a 64-bit division per element (a 64-bit divide is some 70 instructions on
// the GPU, and a fill or a comparison is otherwise a few loads and a hash):
// a 2-D grid whose threads run along the inner extent (along memory, for
// coalesced access), each outer index's setup (a row's start) done once.
//
//   const Launch l = launch_for(rows, cols);
//   kernel<<<l.grid, l.block, 0, stream>>>(...);
//   ... in the kernel:
//   for_each_outer(rows, [&](int64_t r) {
//     const int64_t base = g.index(r, 0);
//     for_each_inner(cols, [&](int64_t c) { ... });
//   });
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

namespace assay::cuda_walk {

constexpr int kThreads = 256;

struct Launch {
  dim3 grid, block;
};

// Threads along the inner extent (a warp at least, the whole block at
// most), the block's others along the outer one; enough blocks to fill the
// device, grid-stride loops for the rest.
inline Launch launch_for(int64_t outer, int64_t inner) {
  int w = 32;
  while (w < kThreads && w < inner) w *= 2;
  const int h = kThreads / w;
  const int64_t gx = std::clamp<int64_t>((inner + w - 1) / w, 1, 1024);
  const int64_t gy = std::clamp<int64_t>((outer + h - 1) / h, 1, std::max<int64_t>(1, std::min<int64_t>(65535, 8192 / gx)));
  return {dim3(unsigned(gx), unsigned(gy)), dim3(unsigned(w), unsigned(h))};
}

__device__ inline int64_t inner_first() { return blockIdx.x * int64_t(blockDim.x) + threadIdx.x; }
__device__ inline int64_t inner_step() { return int64_t(gridDim.x) * blockDim.x; }

// f(o) for each outer index this thread's row of the grid covers.
template <class F>
__device__ void for_each_outer(int64_t outer, F&& f) {
#pragma unroll 1
  for (int64_t o = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; o < outer; o += int64_t(gridDim.y) * blockDim.y) f(o);
}

// f(i) for each inner index this thread covers. Not unrolled: a thread has
// one or a few inner indices an outer one, and an unrolled loop's trip count
// costs a 64-bit division each time it starts (Nsight Compute: a constant
// fill of a 4096^2 matrix issued some 100 instructions an element, 14 % of
// the memory's rate).
template <class F>
__device__ void for_each_inner(int64_t inner, F&& f) {
#pragma unroll 1
  for (int64_t i = inner_first(); i < inner; i += inner_step()) f(i);
}

}  // namespace assay::cuda_walk
