#include "backend/cuda/device_compare.cuh"

#include "backend/cuda/reference_scratch.h"

namespace assay::cuda_judge {
namespace detail {
namespace {

void check(cudaError_t err, const char* what) { cuda_reference::check(err, "device comparison", what); }

// One block: every block's figures in block order (so the sums too), and
// the first few bad elements of the first blocks that had any. Each thread
// takes a run of blocks and a scan places their bad elements: one block's
// thread reading a thousand partials in turn took 130 us.
__global__ void finish_kernel(const Partial* partial, int blocks, Partial* total) {
  using Scan = cub::BlockScan<int, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ Counts warps[kThreads / 32];
  Counts mine;
  zero(mine);
  for (int b = threadIdx.x; b < blocks; b += kThreads) merge_counts(mine, partial[b].n);
  mine = reduce_counts(mine, warps);
  const int per = (blocks + kThreads - 1) / kThreads;
  const int first = min(blocks, int(threadIdx.x) * per), last = min(blocks, first + per);
  int kept = 0;
  for (int b = first; b < last; ++b) kept += partial[b].kept;
  int at = 0, all = 0;
  Scan(scan_storage).ExclusiveSum(kept, at, all);
  for (int b = first; b < last && at < kKeep; ++b)
    for (int k = 0; k < partial[b].kept && at < kKeep; ++k) total->bad_at[at++] = partial[b].bad_at[k];
  if (threadIdx.x == 0) total->n = mine, total->kept = min(all, kKeep);
}

}  // namespace

std::optional<Strided> strided_view(const TensorGeom& g) {
  const std::optional<int64_t> rs = g.uniform_row_stride();
  if (!rs) return std::nullopt;
  return Strided{g.offset, *rs, g.col_stride()};
}

Split split(int64_t count) {
  const int64_t tiles = (count + kThreads - 1) / kThreads;
  // A thread judges a batch at least (kBatch elements: fewer, fuller blocks at
  // small sizes, where a block's reduction outweighed its few elements).
  const int64_t tiles_per_block = std::max<int64_t>(kBatch, (tiles + kMaxBlocks - 1) / kMaxBlocks);
  return {int((tiles + tiles_per_block - 1) / tiles_per_block), tiles_per_block * kThreads};  // each block has elements
}

}  // namespace detail

using namespace detail;

struct Scratch {
  Partial* partial = nullptr;  // kMaxBlocks of them
  Partial* total = nullptr;
  Partial* host = nullptr;     // pinned: the one download
};

detail::Partial* partials(Comparer& c) {
  if (!c.s_) {
    auto scratch = std::make_unique<Scratch>();
    check(cudaMalloc(&scratch->partial, sizeof(Partial) * kMaxBlocks), "cudaMalloc");
    check(cudaMalloc(&scratch->total, sizeof(Partial)), "cudaMalloc");
    check(cudaMallocHost(&scratch->host, sizeof(Partial)), "cudaMallocHost");
    c.s_ = std::move(scratch);
  }
  return c.s_->partial;
}

Comparer::Comparer() = default;
Comparer::~Comparer() {
  if (!s_) return;
  cudaFree(s_->partial), cudaFree(s_->total), cudaFreeHost(s_->host);
}

CompareStats Comparer::compare(void* stream, const Tolerance& tol, const TensorGeom& g, const std::byte* out,
                               const double* ref, const double* bound, const double* terms, const ClassRefs& classes) {
  return compare_from(stream, tol, g, out, ArraySource{ref, bound, terms}, classes);
}

CompareStats Comparer::finish(void* stream_ptr, int blocks, const TensorGeom& g) {
  auto stream = cudaStream_t(stream_ptr);
  check(cudaGetLastError(), "launch");
  finish_kernel<<<1, kThreads, 0, stream>>>(s_->partial, blocks, s_->total);
  check(cudaGetLastError(), "launch");
  check(cudaMemcpyAsync(s_->host, s_->total, sizeof(Partial), cudaMemcpyDeviceToHost, stream), "download");
  check(cudaStreamSynchronize(stream), "sync");
  const Partial& t = *s_->host;
  const Counts& n = t.n;
  CompareStats s;
  s.checked = int64_t(n.checked), s.exact_checked = int64_t(n.exact), s.bad = int64_t(n.bad);
  s.bad_class = int64_t(n.bad_class), s.unwritten = int64_t(n.unwritten), s.finite = int64_t(n.finite);
  s.max_ulps = n.max_ulps, s.max_ratio = n.max_ratio, s.sq_error = n.sq_error;
  const int64_t cols = g.cols();
  for (int k = 0; k < t.kept; ++k) {
    const DeviceBad& b = t.bad_at[k];
    s.first_bad.push_back({0, b.index / cols, b.index % cols, b.expected, b.got, b.ulps, b.ratio});
  }
  return s;
}

}  // namespace assay::cuda_judge
