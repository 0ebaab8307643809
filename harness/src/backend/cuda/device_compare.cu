#include "backend/cuda/device_compare.h"

#include <cub/block/block_scan.cuh>

#include <algorithm>

#include "backend/cuda/reference_scratch.h"

namespace assay::cuda_judge {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;  // one wave on an H200; a fixed count per size keeps the sums' order
constexpr int kKeep = kKeepBadElements;

void check(cudaError_t err, const char* what) { cuda_reference::check(err, "device comparison", what); }

struct DeviceBad {
  int64_t index;
  double expected, got, ulps, ratio;
};

struct Counts {
  unsigned long long checked, exact, bad, bad_class, unwritten, finite;
  double max_ulps, max_ratio, sq_error;
};

// One block's figures over its range of elements, then the whole output's.
struct Partial {
  Counts n;
  int kept;  // first bad elements in `bad_at`, in index order
  DeviceBad bad_at[kKeep];
};

__device__ void merge_counts(Counts& into, const Counts& p) {
  into.checked += p.checked, into.exact += p.exact, into.bad += p.bad, into.bad_class += p.bad_class;
  into.unwritten += p.unwritten, into.finite += p.finite;
  into.max_ulps = fmax(into.max_ulps, p.max_ulps), into.max_ratio = fmax(into.max_ratio, p.max_ratio);
  into.sq_error += p.sq_error;
}

__device__ void zero(Counts& p) {
  p.checked = p.exact = p.bad = p.bad_class = p.unwritten = p.finite = 0;
  p.max_ulps = p.max_ratio = p.sq_error = 0;
}

// Sums and maxima of every thread's figures into shared[0] (a fixed tree:
// the same order every run).
__device__ void reduce_counts(const Counts& mine, Counts* shared) {
  shared[threadIdx.x] = mine;
  __syncthreads();
  for (int step = kThreads / 2; step > 0; step /= 2) {
    if (int(threadIdx.x) < step) merge_counts(shared[threadIdx.x], shared[threadIdx.x + step]);
    __syncthreads();
  }
}

struct Args {
  Tolerance tol;
  TensorGeom g;
  const std::byte* out;
  const double *ref, *bound, *terms;
  ClassRefs classes;
  int64_t count, chunk;  // elements; each block's contiguous range (a multiple of kThreads)
};

// Element i, at (r, c) of the matrix view: its verdict, and its figures
// added to `mine` when count is set.
__device__ bool judge_element(const Args& a, int64_t i, int64_t r, int64_t c, Counts& mine, bool count,
                              DeviceBad& here) {
  const uint64_t bits = load_bits(a.g.dtype, a.out + a.g.index(r, c) * dtype_bytes(a.g.dtype));
  const double ref = a.ref[i];
  const ElementVerdict v = check_element(a.tol, a.g.dtype, bits, ref, a.bound[i], a.terms ? a.terms[i] : 0.0, a.classes, i);
  const double ulps = ulp_distance(a.tol.out, v.got, v.expected), ratio = ratio_of(v);
  if (count) {
    ++mine.checked;
    mine.unwritten += v.unwritten, mine.exact += v.exact;
    if (std::isfinite(v.got) && std::isfinite(ref)) ++mine.finite, mine.sq_error += (v.got - ref) * (v.got - ref);
    if (std::isfinite(ulps)) mine.max_ulps = fmax(mine.max_ulps, ulps);
    if (!v.ok || v.allowed > 0) mine.max_ratio = fmax(mine.max_ratio, ratio);
    if (!v.ok) ++mine.bad, mine.bad_class += v.class_error;
  }
  if (!v.ok) here = DeviceBad{i, v.expected, v.got, ulps, ratio};
  return !v.ok;
}

// Each block judges elements [blockIdx.x * chunk, ...), each thread every
// kThreads-th, and leaves its figures in partial[blockIdx.x]. The figures
// take one pass with no barrier (a barrier a tile kept too few loads in
// flight: a 4096^2 output took 160 us); only a block with bad elements
// passes again, a tile at a time, keeping its first few in index order (a
// scan ranks each tile's).
__global__ void compare_kernel(Args a, Partial* partial) {
  using Scan = cub::BlockScan<int, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ Counts shared[kThreads];
  __shared__ DeviceBad kept[kKeep];
  Counts mine;
  zero(mine);
  const int64_t begin = int64_t(blockIdx.x) * a.chunk, end = min(a.count, begin + a.chunk);
  const int64_t cols = a.g.cols();
  // This thread's first element (r, c) of the matrix view, moved on a tile
  // at a time: a division only where it passes a row's end.
  const int64_t r0 = (begin + threadIdx.x) / cols, c0 = (begin + threadIdx.x) % cols;
  DeviceBad here{};
  bool any_bad = false;
  int64_t r = r0, c = c0;
  for (int64_t i = begin + threadIdx.x; i < end; i += kThreads, c += kThreads) {
    if (c >= cols) r += c / cols, c %= cols;
    any_bad |= judge_element(a, i, r, c, mine, true, here);
  }
  reduce_counts(mine, shared);
  int found = 0;  // the same in every thread: the scans' aggregates
  if (__syncthreads_or(any_bad)) {
    r = r0, c = c0;
    for (int64_t base = begin; base < end && found < kKeep; base += kThreads, c += kThreads) {
      if (c >= cols) r += c / cols, c %= cols;
      const int64_t i = base + threadIdx.x;
      const bool bad = i < end && judge_element(a, i, r, c, mine, false, here);
      if (__syncthreads_or(bad)) {
        int rank = 0, tile_bad = 0;
        Scan(scan_storage).ExclusiveSum(bad ? 1 : 0, rank, tile_bad);
        if (bad && found + rank < kKeep) kept[found + rank] = here;
        found = min(kKeep, found + tile_bad);
        __syncthreads();  // scan_storage is reused by the next tile's scan
      }
    }
  }
  if (threadIdx.x == 0) {
    Partial& p = partial[blockIdx.x];
    p.n = shared[0];
    p.kept = found;
    for (int k = 0; k < found; ++k) p.bad_at[k] = kept[k];
  }
}

// One block: every block's figures in block order (so the sums too), and
// the first few bad elements of the first blocks that had any. Each thread
// takes a run of blocks and a scan places their bad elements: one block's
// thread reading a thousand partials in turn took 130 us.
__global__ void finish_kernel(const Partial* partial, int blocks, Partial* total) {
  using Scan = cub::BlockScan<int, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ Counts shared[kThreads];
  Counts mine;
  zero(mine);
  for (int b = threadIdx.x; b < blocks; b += kThreads) merge_counts(mine, partial[b].n);
  reduce_counts(mine, shared);
  const int per = (blocks + kThreads - 1) / kThreads;
  const int first = min(blocks, int(threadIdx.x) * per), last = min(blocks, first + per);
  int kept = 0;
  for (int b = first; b < last; ++b) kept += partial[b].kept;
  int at = 0, all = 0;
  Scan(scan_storage).ExclusiveSum(kept, at, all);
  for (int b = first; b < last && at < kKeep; ++b)
    for (int k = 0; k < partial[b].kept && at < kKeep; ++k) total->bad_at[at++] = partial[b].bad_at[k];
  if (threadIdx.x == 0) total->n = shared[0], total->kept = min(all, kKeep);
}

}  // namespace

struct Scratch {
  Partial* partial = nullptr;  // kMaxBlocks of them
  Partial* total = nullptr;
  Partial* host = nullptr;     // pinned: the one download
};

Comparer::Comparer() = default;
Comparer::~Comparer() {
  if (!s_) return;
  cudaFree(s_->partial), cudaFree(s_->total), cudaFreeHost(s_->host);
}

CompareStats Comparer::compare(void* stream_ptr, const Tolerance& tol, const TensorGeom& g, const std::byte* out,
                               const double* ref, const double* bound, const double* terms, const ClassRefs& classes) {
  CompareStats s;
  const int64_t count = g.count();
  if (count == 0) return s;
  if (!s_) {
    auto scratch = std::make_unique<Scratch>();
    check(cudaMalloc(&scratch->partial, sizeof(Partial) * kMaxBlocks), "cudaMalloc");
    check(cudaMalloc(&scratch->total, sizeof(Partial)), "cudaMalloc");
    check(cudaMallocHost(&scratch->host, sizeof(Partial)), "cudaMallocHost");
    s_ = std::move(scratch);
  }
  auto stream = cudaStream_t(stream_ptr);
  const int64_t tiles = (count + kThreads - 1) / kThreads;
  const int64_t tiles_per_block = (tiles + kMaxBlocks - 1) / kMaxBlocks;
  const int blocks = int((tiles + tiles_per_block - 1) / tiles_per_block);  // each with elements to judge
  const int64_t chunk = tiles_per_block * kThreads;
  Args a{tol, g, out, ref, bound, terms, classes, count, chunk};
  compare_kernel<<<blocks, kThreads, 0, stream>>>(a, s_->partial);
  check(cudaGetLastError(), "launch");
  finish_kernel<<<1, kThreads, 0, stream>>>(s_->partial, blocks, s_->total);
  check(cudaGetLastError(), "launch");
  check(cudaMemcpyAsync(s_->host, s_->total, sizeof(Partial), cudaMemcpyDeviceToHost, stream), "download");
  check(cudaStreamSynchronize(stream), "sync");
  const Partial& t = *s_->host;
  const Counts& n = t.n;
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
