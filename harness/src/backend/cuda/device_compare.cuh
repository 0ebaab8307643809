// The comparison kernels of device_compare.h for any source of the
// reference's figures: arrays of them (Comparer::compare), or figures formed
// as they are read, so that no m x n array of the result is written and read
// again (GEMM's result from its FP64 products: ops/gemm). A source is a
// trivially copyable struct with
//   struct Raw;  what one element's figures are formed from, as loaded
//   __device__ Raw load(int64_t i, int64_t row, int64_t col) const;
//   __device__ Figures figures(const Raw&) const;
// giving element i's (row-major index i = row * cols + col of the output's
// matrix view) reference, bound and terms. Loading and forming are apart so
// that a thread's batch of loads is in flight together (forming figures as
// each element was loaded waited out a load's latency an element).
// Included by the .cu files that instantiate a source; the kernels are
// templates, so each such file holds its own copies.
#pragma once
#include <cub/block/block_scan.cuh>

#include <algorithm>
#include <optional>

#include "backend/cuda/device_compare.h"

namespace assay::cuda_judge {

// One element's reference figures (judge/element_check.h: check_element).
struct Figures {
  double ref, bound, terms;
};

// The figures as arrays in device memory, g.count() each, row-major; terms nullable.
struct ArraySource {
  const double *ref, *bound, *terms;
  using Raw = Figures;
  __device__ Raw load(int64_t i, int64_t, int64_t) const { return {ref[i], bound[i], terms ? terms[i] : 0.0}; }
  __device__ Figures figures(const Raw& r) const { return r; }
};

namespace detail {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;  // a fixed count per size (not per device) keeps the sums' order
constexpr int kKeep = kKeepBadElements;
// Elements a thread loads before it judges any: enough loads in flight to
// cover the memory's latency (one at a time, a 4096^2 output took 160 us).
constexpr int kBatch = 4;

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

inline __device__ void merge_counts(Counts& into, const Counts& p) {
  into.checked += p.checked, into.exact += p.exact, into.bad += p.bad, into.bad_class += p.bad_class;
  into.unwritten += p.unwritten, into.finite += p.finite;
  into.max_ulps = fmax(into.max_ulps, p.max_ulps), into.max_ratio = fmax(into.max_ratio, p.max_ratio);
  into.sq_error += p.sq_error;
}

inline __device__ void zero(Counts& p) {
  p.checked = p.exact = p.bad = p.bad_class = p.unwritten = p.finite = 0;
  p.max_ulps = p.max_ratio = p.sq_error = 0;
}

// The figures of lane + o merged into lane's, for every lane at once.
inline __device__ void merge_from_lane(Counts& c, int o) {
  constexpr unsigned all = 0xffffffffu;
  Counts p;
  p.checked = __shfl_down_sync(all, c.checked, o), p.exact = __shfl_down_sync(all, c.exact, o);
  p.bad = __shfl_down_sync(all, c.bad, o), p.bad_class = __shfl_down_sync(all, c.bad_class, o);
  p.unwritten = __shfl_down_sync(all, c.unwritten, o), p.finite = __shfl_down_sync(all, c.finite, o);
  p.max_ulps = __shfl_down_sync(all, c.max_ulps, o), p.max_ratio = __shfl_down_sync(all, c.max_ratio, o);
  p.sq_error = __shfl_down_sync(all, c.sq_error, o);
  merge_counts(c, p);
}

// Sums and maxima of every thread's figures, returned in thread 0: within
// each warp by shuffles, then the warps' in warp 0. A fixed tree, so the
// same order every run (a shared-memory tree of 256 entries took eight
// barriers and 18 KiB a block).
inline __device__ Counts reduce_counts(Counts mine, Counts* warps) {
  constexpr int kWarps = kThreads / 32;
  for (int o = 16; o > 0; o /= 2) merge_from_lane(mine, o);
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  if (lane == 0) warps[warp] = mine;
  __syncthreads();
  if (warp == 0) {
    if (lane < kWarps) mine = warps[lane]; else zero(mine);
    for (int o = kWarps / 2; o > 0; o /= 2) merge_from_lane(mine, o);
  }
  return mine;
}

// The matrix view's element (row, col) at offset + row * rs + col * cs
// elements from the data start (TensorGeom::uniform_row_stride: every
// tensor of at most two dimensions, a compact N-D one). The typed kernels
// read only such outputs, from element-aligned addresses, with one load and
// no walk over the dimensions.
struct Strided {
  int64_t offset, rs, cs;
};
std::optional<Strided> strided_view(const TensorGeom& g);

template <class Source>
struct Args {
  Tolerance tol;
  TensorGeom g;
  Strided view;  // the typed kernels' (kOut >= 0) way to the elements
  const std::byte* out;
  Source src;
  ClassRefs classes;
  int64_t count, chunk;  // elements; each block's contiguous range (a multiple of kThreads)
};

// What one element's judgement reads: its stored bits and what its
// reference figures are formed from.
template <class Source>
struct Loaded {
  uint64_t bits;
  typename Source::Raw raw;
};

// The (row, col) of a thread's element in the matrix view, moved on by
// kThreads elements at a time without a division (kThreads = q cols + rem).
struct Walk {
  int64_t r, c, cols, q, rem;
  __device__ Walk(int64_t first, int64_t cols_) : r(first / cols_), c(first % cols_), cols(cols_), q(kThreads / cols_), rem(kThreads % cols_) {}
  __device__ void next() {
    r += q, c += rem;
    if (c >= cols) c -= cols, ++r;
  }
};

// One stored element as bits. kOut >= 0: a strided view (Strided), each
// element aligned to its size, so one load of that width (the general path's
// dimension walk and alignment tests kept the loads of a batch apart).
template <int kOut, class Source>
__device__ Loaded<Source> load(const Args<Source>& a, DType t, int64_t i, const Walk& w) {
  if constexpr (kOut >= 0) {
    constexpr int width = dtype_bytes(DType(kOut));
    const std::byte* p = a.out + (a.view.offset + w.r * a.view.rs + w.c * a.view.cs) * width;
    uint64_t bits;
    if constexpr (width == 8) bits = *reinterpret_cast<const uint64_t*>(p);
    else if constexpr (width == 4) bits = *reinterpret_cast<const uint32_t*>(p);
    else if constexpr (width == 2) bits = *reinterpret_cast<const uint16_t*>(p);
    else bits = *reinterpret_cast<const uint8_t*>(p);
    return {bits, a.src.load(i, w.r, w.c)};
  } else {
    return {load_bits(t, a.out + a.g.index(w.r, w.c) * dtype_bytes(t)), a.src.load(i, w.r, w.c)};
  }
}

// Element i's figures added to `mine`; whether it is bad. t is the stored
// type, tol.out the one the reference rounds to. The error ratio, a
// division, is formed only where it may raise the maximum: where the
// difference d is 0, or d * (1 + 2^-49) < max_ratio * allowed (both
// products normal), the rounded quotient cannot exceed max_ratio, so the
// maximum is the one dividing at every element gives (the host's compare).
__device__ inline bool count_element(const Tolerance& tol, DType t, int64_t i, uint64_t bits, const Figures& f,
                                     const ClassRefs& classes, Counts& mine) {
  const ElementVerdict v = check_element(tol, t, bits, f.ref, f.bound, f.terms, classes, i);
  const double ulps = ulp_distance(tol.out, v.got, v.expected);
  ++mine.checked;
  mine.unwritten += v.unwritten, mine.exact += v.exact;
  if (std::isfinite(v.got) && std::isfinite(f.ref)) ++mine.finite, mine.sq_error += (v.got - f.ref) * (v.got - f.ref);
  if (std::isfinite(ulps)) mine.max_ulps = fmax(mine.max_ulps, ulps);
  if (!v.ok || v.allowed > 0) {
    const double d = fabs(v.got - v.expected), bar = mine.max_ratio * v.allowed;
    const bool below = v.ok && (d == 0 || (bar >= 0x1p-1021 && d * (1 + 0x1p-49) < bar));
    if (!below) mine.max_ratio = fmax(mine.max_ratio, ratio_of(v));
  }
  if (!v.ok) ++mine.bad, mine.bad_class += v.class_error;
  return !v.ok;
}

// Element i's verdict, and its report when bad (the pass that keeps them).
__device__ inline bool bad_element(const Tolerance& tol, DType t, int64_t i, uint64_t bits, const Figures& f,
                                   const ClassRefs& classes, DeviceBad& here) {
  const ElementVerdict v = check_element(tol, t, bits, f.ref, f.bound, f.terms, classes, i);
  if (!v.ok) here = DeviceBad{i, v.expected, v.got, ulp_distance(tol.out, v.got, v.expected), ratio_of(v)};
  return !v.ok;
}

// Each block judges elements [blockIdx.x * chunk, ...), each thread every
// kThreads-th, and leaves its figures in partial[blockIdx.x]. The figures
// take one pass with no barrier; only a block with bad elements passes
// again, a tile at a time, keeping its first few in index order (a scan
// ranks each tile's).
//
// kOut >= 0: the output is stored in, and judged against, DType(kOut),
// known when compiled, so the conversions of every other type fall away (a
// kernel for any type took some 150 registers), and read through a.view;
// -1: the types at run time, any layout.
template <int kOut, class Source>
__global__ void __launch_bounds__(kThreads, 2) compare_kernel(const __grid_constant__ Args<Source> a, Partial* partial) {
  const DType t = kOut < 0 ? a.g.dtype : DType(kOut);
  Tolerance tol = a.tol;
  if (kOut >= 0) tol.out = DType(kOut);
  using Scan = cub::BlockScan<int, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ DeviceBad kept[kKeep];
  __shared__ Counts warps[kThreads / 32];
  Counts mine;
  zero(mine);
  const int64_t begin = int64_t(blockIdx.x) * a.chunk, end = min(a.count, begin + a.chunk);
  const Walk first(begin + threadIdx.x, a.g.cols());
  bool any_bad = false;
  Walk w = first;
  for (int64_t i0 = begin + threadIdx.x; i0 < end; i0 += int64_t(kThreads) * kBatch) {
    Loaded<Source> x[kBatch];
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      const int64_t i = i0 + int64_t(k) * kThreads;
      if (i < end) x[k] = load<kOut>(a, t, i, w);
      w.next();
    }
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      const int64_t i = i0 + int64_t(k) * kThreads;
      if (i < end) any_bad |= count_element(tol, t, i, x[k].bits, a.src.figures(x[k].raw), a.classes, mine);
    }
  }
  mine = reduce_counts(mine, warps);
  int found = 0;  // the same in every thread: the scans' aggregates
  if (__syncthreads_or(any_bad)) {
    DeviceBad here{};
    w = first;
    for (int64_t base = begin; base < end && found < kKeep; base += kThreads, w.next()) {
      const int64_t i = base + threadIdx.x;
      bool bad = false;
      if (i < end) {
        const Loaded<Source> x = load<kOut>(a, t, i, w);
        bad = bad_element(tol, t, i, x.bits, a.src.figures(x.raw), a.classes, here);
      }
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
    p.n = mine;
    p.kept = found;
    for (int k = 0; k < found; ++k) p.bad_at[k] = kept[k];
  }
}

// How the elements are split between blocks.
struct Split {
  int blocks;
  int64_t chunk;
};
Split split(int64_t count);

}  // namespace detail

// The per-block figures (kMaxBlocks of them), made at the first comparison.
detail::Partial* partials(Comparer& c);

template <class Source>
CompareStats Comparer::compare_from(void* stream_ptr, const Tolerance& tol, const TensorGeom& g, const std::byte* out,
                                    const Source& src, const ClassRefs& classes) {
  using namespace detail;
  const int64_t count = g.count();
  if (count == 0) return {};
  Partial* partial = partials(*this);
  const Split s = split(count);
  auto stream = cudaStream_t(stream_ptr);
  const std::optional<Strided> view = strided_view(g);
  const Args<Source> a{tol, g, view.value_or(Strided{}), out, src, classes, count, s.chunk};
  // The common output types each get a kernel of their own (compare_kernel)
  // where the elements are a strided view at aligned addresses.
  const bool one_type = g.dtype == tol.out && view && reinterpret_cast<uintptr_t>(out) % dtype_bytes(g.dtype) == 0;
  if (one_type && g.dtype == DType::f32) compare_kernel<int(DType::f32)><<<s.blocks, kThreads, 0, stream>>>(a, partial);
  else if (one_type && g.dtype == DType::f16) compare_kernel<int(DType::f16)><<<s.blocks, kThreads, 0, stream>>>(a, partial);
  else if (one_type && g.dtype == DType::bf16) compare_kernel<int(DType::bf16)><<<s.blocks, kThreads, 0, stream>>>(a, partial);
  else if (one_type && g.dtype == DType::f64) compare_kernel<int(DType::f64)><<<s.blocks, kThreads, 0, stream>>>(a, partial);
  else compare_kernel<-1><<<s.blocks, kThreads, 0, stream>>>(a, partial);
  return finish(stream_ptr, s.blocks, g);
}

}  // namespace assay::cuda_judge
