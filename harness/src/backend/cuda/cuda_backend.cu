#include "backend/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "backend/cuda/matrix_walk.cuh"
#include "backend/host/host_backend.h"
#include "core/error.h"

namespace assay {

void check_cuda(int status, const char* what) {
  if (status != cudaSuccess)
    throw InfraError(fmt::format("{}: {}", what, cudaGetErrorString(cudaError_t(status))));
}

bool cuda_available(std::string* why) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
    cudaGetLastError();  // clear, so later calls start clean
    return false;
  }
  return true;
}

std::string cuda_arch() {
  int dev = 0, major = 0, minor = 0;
  check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "compute capability");
  check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "compute capability");
  return fmt::format("sm_{}{}", major, minor);
}

std::unique_ptr<Backend> make_backend(BackendKind kind, size_t device_memory_share) {
  if (kind == BackendKind::host) return std::make_unique<HostBackend>();
  return std::make_unique<CudaBackend>(device_memory_share);
}

namespace {
// The context of a process on a full device cannot be made: transient where others share it.
void check_setup(cudaError_t e, const char* what) {
  if (e == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    throw OutOfMemory(fmt::format("{}: {} (the device's memory is full)", what, cudaGetErrorString(e)));
  }
  check_cuda(e, what);
}
// Cached blocks beyond this go back to the device when a case ends: only huge
// cases leave that much, and runs sharing the GPU may be waiting for it.
constexpr size_t kKeepCachedBlocks = size_t(4) << 30;
// make_room looks at cases from this size on (smaller ones: their
// allocations tell), and wants this much free beside them (the worker's
// staging copy, the candidate's own allocations).
constexpr double kRoomCheckBytes = double(size_t(1) << 30), kRoomMargin = double(size_t(1) << 30);
}  // namespace

CudaBackend::CudaBackend(size_t share) {
  std::string why;
  if (!cuda_available(&why)) throw InfraError("the cuda backend needs a CUDA GPU: " + why);
  check_cuda(cudaGetDevice(&device_), "cudaGetDevice");
  cudaStream_t s;
  check_setup(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  stream_ = s;
  size_t free_bytes = 0, total = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  // Of the total, not of what is free now: a run draws the same cases
  // whatever the other processes on the GPU hold (docs/cases.md).
  share_ = resolve_device_share(total, share, std::getenv("ASSAY_DEVICE_MEMORY_GIB"), kDefaultDeviceShare);
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device_) == cudaSuccess) processes_ = GpuProcessList::open(bus, no_processes_);
  else no_processes_ = "no PCI bus id for the device";
  // The reference's FP64 scratch comes from the stream-ordered pool; keep up
  // to 2 GiB of it between cases (small cases pay nothing for the pool's
  // growth), but give the scratch of huge cases back to the device.
  cudaMemPool_t pool;
  check_cuda(cudaDeviceGetDefaultMemPool(&pool, device_), "default memory pool");
  uint64_t keep = uint64_t(2) << 30;
  check_cuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "pool threshold");
  // Case buffers are whole blocks, each shareable with a worker (block_cache.h).
  BlockCache::Device device;
  device.allocate = [](size_t bytes) -> std::byte* {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // out of memory is not sticky: clear it
      return nullptr;
    }
    return static_cast<std::byte*>(p);
  };
  device.free = [](std::byte* p) { cudaFree(p); };
  device.before_free = [this](const std::vector<uint64_t>& ids) {
    for (auto& [key, hook] : unmap_hooks_) hook(ids);
  };
  blocks_ = std::make_unique<BlockCache>(std::move(device), kKeepCachedBlocks);
  diff_capacity_ = 64;
  check_setup(cudaMalloc(&diff_index_, diff_capacity_ * sizeof(unsigned long long)), "cudaMalloc");
  check_setup(cudaMallocHost(&diff_host_, diff_capacity_ * sizeof(unsigned long long)), "cudaMallocHost");
}

DeviceMemoryFigures CudaBackend::measure_memory() {
  DeviceMemoryFigures f;
  size_t free_bytes = 0, total = 0;
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) cudaGetLastError();
  f.free = free_bytes, f.total = total, f.share = share_;
  cudaMemPool_t pool;
  uint64_t pooled = 0;
  if (cudaDeviceGetDefaultMemPool(&pool, device_) == cudaSuccess)
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &pooled);
  f.own_buffers = blocks_->live_bytes() + blocks_->cached_bytes() + pooled;
  f.why_no_tree = no_processes_;
  if (processes_) {
    if (auto procs = processes_->list()) f.tree = tree_usage(*procs, getpid(), proc_parent);
    if (!f.tree) f.why_no_tree = "NVML does not list this process with its memory (a container with its own PIDs?)";
  }
  return f;
}

std::string CudaBackend::memory_figures() { return describe(measure_memory()); }

void CudaBackend::release_cached() {
  blocks_->trim();  // stops a worker that maps them first (the unmap hook)
  cudaMemPool_t pool;
  if (cudaStreamSynchronize(cudaStream_t(stream_)) == cudaSuccess &&
      cudaDeviceGetDefaultMemPool(&pool, device_) == cudaSuccess)
    cudaMemPoolTrimTo(pool, 0);
  cudaGetLastError();
}

void CudaBackend::make_room(double bytes) {
  if (bytes < kRoomCheckBytes) return;
  DeviceMemoryFigures f = measure_memory();
  // This run stays inside its share (its workers count), and what it caches
  // may be just what the case needs.
  if (double(f.own()) + bytes > double(share_) || double(f.free) < bytes + kRoomMargin) {
    release_cached();
    f = measure_memory();
  }
  if (double(f.free) < bytes + kRoomMargin)  // other processes hold it: retry_on_oom waits for them
    throw OutOfMemory(fmt::format("no room for a case of {:.2f} GiB", bytes / double(size_t(1) << 30)));
}

CudaBackend::~CudaBackend() {
  cudaStreamSynchronize(cudaStream_t(stream_));
  unmap_hooks_.clear();  // whoever added them may be gone by now
  blocks_.reset();
  for (std::byte* p : exact_) cudaFree(p);
  if (diff_index_) cudaFree(diff_index_);
  if (diff_host_) cudaFreeHost(diff_host_);
  if (cublas_) cublasDestroy(cublas_);
  if (stream_) cudaStreamDestroy(cudaStream_t(stream_));
}

cublasContext* CudaBackend::cublas() {
  if (!cublas_) {
    if (cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS) throw InfraError("cublasCreate failed");
    cublasSetStream(cublas_, cudaStream_t(stream_));
    cublasSetMathMode(cublas_, CUBLAS_PEDANTIC_MATH);  // the reference must be plain FP64
  }
  return cublas_;
}

Buffer CudaBackend::allocate(size_t bytes) {
  std::optional<Block> b = blocks_->take(bytes);
  if (!b)
    throw OutOfMemory(fmt::format("cudaMalloc of {} bytes: out of device memory ({} bytes in use by this case's "
                                 "buffers)", bytes, blocks_->live_bytes()));
  return Buffer{b->data, bytes, -1, b->id};
}

// Outside the block cache: memcheck knows each cudaMalloc's own size, and
// no slice of a 2 MiB block hides an overrun. cudaMalloc/cudaFree
// synchronise the device, which a replay does not mind.
Buffer CudaBackend::allocate_exact(size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();  // out of memory is not sticky: clear it
    throw OutOfMemory(fmt::format("cudaMalloc of exactly {} bytes: out of device memory", bytes));
  }
  exact_.insert(static_cast<std::byte*>(p));
  return Buffer{static_cast<std::byte*>(p), bytes, -1, 0};
}

// Reuse is safe without waiting: every later use of the block is queued on
// the same stream, and a worker's calls have finished before run() returns.
void CudaBackend::release(Buffer& b) {
  if (b.data && exact_.erase(b.data)) cudaFree(b.data);
  else if (b.data) blocks_->give_back(b.data);
  b = {};
}

std::optional<Buffer> CudaBackend::owner_of(const void* p) const {
  std::optional<Block> b = blocks_->owner_of(p);
  if (!b) return std::nullopt;
  return Buffer{b->data, b->bytes, -1, b->id};
}

bool CudaBackend::ipc_handle(const Buffer& b, unsigned char (&handle)[kIpcHandleBytes]) {
  static_assert(sizeof(cudaIpcMemHandle_t) == kIpcHandleBytes);
  auto it = ipc_handles_.find(b.id);
  if (it == ipc_handles_.end()) {
    cudaIpcMemHandle_t h;
    check_cuda(cudaIpcGetMemHandle(&h, b.data), "cudaIpcGetMemHandle");
    it = ipc_handles_.emplace(b.id, std::array<unsigned char, kIpcHandleBytes>{}).first;
    std::memcpy(it->second.data(), &h, sizeof h);
  }
  std::memcpy(handle, it->second.data(), kIpcHandleBytes);
  return true;
}

namespace {

constexpr int kThreads = 256;
unsigned blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 1 ? 1 : b > 65536 ? 65536 : b);  // grid-stride loops cover the rest
}

// One store per word where the buffer is aligned to the width (a byte-wise
// memcpy per word ran at a quarter of the write bandwidth).
template <class Word>
__global__ void pattern_words_kernel(Word* data, size_t words, Word pattern) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x)
    data[i] = pattern;
}
__global__ void pattern_kernel(std::byte* data, size_t words, uint64_t pattern, int width) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x)
    memcpy(data + i * width, &pattern, width);
}

// The element kernels walk the matrix view (backend/cuda/matrix_walk.cuh):
// a row's start and whether it is a broadcast row's representative once per
// row, then along the columns.
// kType >= 0: the tensor's dtype, known when compiled, so that the
// conversions of every other type fall away (Nsight Compute: some 280
// instructions an element for any type at run time); -1: at run time.
template <int kType>
__global__ void tensor_kernel(std::byte* data, const __grid_constant__ TensorGeom g, const __grid_constant__ RecipeParams p, uint64_t seed, uint32_t tensor) {
  const DType t = kType < 0 ? g.dtype : DType(kType);
  const int size = dtype_bytes(t);
  const int64_t cols = g.cols(), cs = g.col_stride();
  bool broadcast = false;  // representative() divides by each extent: only where it matters
  for (int d = 0; d < g.ndim; ++d) broadcast |= g.strides[d] == 0 && g.shape[d] > 1;
  cuda_walk::for_each_outer(g.rows(), [&](int64_t r) {
    if (broadcast && !g.representative(r, 0)) return;  // a broadcast element once, not raced by its copies
    const int64_t base = g.index(r, 0), last = cs == 0 ? 1 : cols;  // a broadcast column: its first element
    cuda_walk::for_each_inner(last, [&](int64_t c) {
      store_bits(t, data + (base + c * cs) * size, recipe_bits(p, t, seed, tensor, r, c));
    });
  });
}

// fill_patched: thread j writes covered position j (at most a row's worth).
__global__ void patch_kernel(std::byte* data, const __grid_constant__ TensorGeom g, const __grid_constant__ RecipeParams p,
                             uint64_t seed, uint32_t tensor) {
  const int size = dtype_bytes(g.dtype);
  const int64_t n = p.patch.covered(g.cols());
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n; j += int64_t(gridDim.x) * blockDim.x) {
    uint64_t r = 0, c = 0;
    p.patch.position(j, r, c);
    if (r < uint64_t(g.rows()) && c < uint64_t(g.cols()) && g.representative(int64_t(r), int64_t(c)))
      store_bits(g.dtype, data + g.index(int64_t(r), int64_t(c)) * size, recipe_bits(p, g.dtype, seed, tensor, r, c));
  }
}

__global__ void constant_kernel(std::byte* data, const __grid_constant__ TensorGeom g, uint64_t bits) {
  const int size = dtype_bytes(g.dtype);
  const int64_t cols = g.cols(), cs = g.col_stride();
  cuda_walk::for_each_outer(g.rows(), [&](int64_t r) {
    const int64_t base = g.index(r, 0);
    cuda_walk::for_each_inner(cols, [&](int64_t c) { store_bits(g.dtype, data + (base + c * cs) * size, bits); });
  });
}

__global__ void copy_elements_kernel(std::byte* dst, const std::byte* src, const __grid_constant__ TensorGeom g) {
  const int size = dtype_bytes(g.dtype);
  const int64_t cols = g.cols(), cs = g.col_stride();
  cuda_walk::for_each_outer(g.rows(), [&](int64_t r) {
    const int64_t base = g.index(r, 0);
    cuda_walk::for_each_inner(cols, [&](int64_t c) {
      const int64_t at = (base + c * cs) * size;
      store_bits(g.dtype, dst + at, load_bits(g.dtype, src + at));
    });
  });
}

__global__ void copy_rotated_kernel(std::byte* dst, const std::byte* src, const __grid_constant__ TensorGeom g,
                                    const __grid_constant__ Rotation rot) {
  const int size = dtype_bytes(g.dtype);
  const int64_t cols = g.cols(), cs = g.col_stride();
  cuda_walk::for_each_outer(g.rows(), [&](int64_t r) {
    const int64_t to = g.index(r, 0), from = g.index(int64_t(rot.source_row(uint64_t(r))), 0);
    cuda_walk::for_each_inner(cols, [&](int64_t c) {
      store_bits(g.dtype, dst + (to + c * cs) * size,
                 load_bits(g.dtype, src + (from + int64_t(rot.source_col(uint64_t(c))) * cs) * size));
    });
  });
}

// Several pairs of buffers in one launch (a call's inputs and outputs: one
// launch, not one each): pair blockIdx.y, 16 bytes a thread where both are
// 16-byte aligned (the first differing byte of a word: its lowest differing
// bits, little-endian), the tail byte by byte.
constexpr int kPairsPerLaunch = 16;
struct DifferencePairs {
  const std::byte* x[kPairsPerLaunch];
  const std::byte* y[kPairsPerLaunch];
  size_t bytes[kPairsPerLaunch];
  bool aligned[kPairsPerLaunch];
};
__global__ void difference_kernel(const __grid_constant__ DifferencePairs p, unsigned long long* first_of) {
  const int k = int(blockIdx.y);
  const std::byte *x = p.x[k], *y = p.y[k];
  const size_t bytes = p.bytes[k];
  unsigned long long* first = first_of + k;
  const size_t words = p.aligned[k] ? bytes / 16 : 0, step = size_t(gridDim.x) * blockDim.x;
  const size_t at = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  auto* wx = reinterpret_cast<const ulonglong2*>(x);
  auto* wy = reinterpret_cast<const ulonglong2*>(y);
  for (size_t i = at; i < words; i += step) {
    const ulonglong2 a = wx[i], b = wy[i];
    const unsigned long long lo = a.x ^ b.x, hi = a.y ^ b.y;  // little-endian: lo holds the lower 8 bytes
    if (lo) atomicMin(first, (unsigned long long)(i * 16 + (__ffsll((long long)lo) - 1) / 8));
    else if (hi) atomicMin(first, (unsigned long long)(i * 16 + 8 + (__ffsll((long long)hi) - 1) / 8));
  }
  for (size_t i = words * 16 + at; i < bytes; i += step)
    if (x[i] != y[i]) atomicMin(first, (unsigned long long)i);
}

}  // namespace

std::optional<size_t> CudaBackend::first_difference(Buffer x, Buffer y) {
  const BufferPair one{x, y};
  return first_differences(&one, 1).front();
}

std::vector<std::optional<size_t>> CudaBackend::first_differences(const BufferPair* pairs, size_t count) {
  auto s = cudaStream_t(stream_);
  if (count > diff_capacity_) {  // rare: a case with many tensors
    check_cuda(cudaStreamSynchronize(s), "first_differences sync");
    cudaFree(diff_index_), cudaFreeHost(diff_host_);
    diff_index_ = nullptr, diff_host_ = nullptr, diff_capacity_ = 0;
    check_cuda(cudaMalloc(&diff_index_, count * sizeof(unsigned long long)), "cudaMalloc");
    check_cuda(cudaMallocHost(&diff_host_, count * sizeof(unsigned long long)), "cudaMallocHost");
    diff_capacity_ = count;
  }
  std::vector<std::optional<size_t>> out(count);
  if (count == 0) return out;
  check_cuda(cudaMemsetAsync(diff_index_, 0xff, count * sizeof(unsigned long long), s), "first_differences");  // none
  for (size_t first = 0; first < count; first += kPairsPerLaunch) {
    DifferencePairs p{};
    const int n = int(std::min<size_t>(kPairsPerLaunch, count - first));
    int64_t most = 1;  // work items of the largest pair: the grid's width
    for (int j = 0; j < n; ++j) {
      const Buffer& x = pairs[first + size_t(j)].x;
      const Buffer& y = pairs[first + size_t(j)].y;
      p.x[j] = x.data, p.y[j] = y.data, p.bytes[j] = x.bytes;  // an empty pair finds nothing
      p.aligned[j] = (reinterpret_cast<uintptr_t>(x.data) | reinterpret_cast<uintptr_t>(y.data)) % 16 == 0;
      most = std::max<int64_t>(most, int64_t(p.aligned[j] ? x.bytes / 16 + 16 : x.bytes));
    }
    difference_kernel<<<dim3(blocks_for(most), unsigned(n)), kThreads, 0, s>>>(p, diff_index_ + first);
  }
  check_cuda(cudaGetLastError(), "first_differences launch");
  check_cuda(cudaMemcpyAsync(diff_host_, diff_index_, count * sizeof(unsigned long long), cudaMemcpyDeviceToHost, s),
             "first_differences");
  check_cuda(cudaStreamSynchronize(s), "first_differences sync");
  for (size_t k = 0; k < count; ++k)
    if (diff_host_[k] != ~0ull) out[k] = size_t(diff_host_[k]);
  return out;
}

void CudaBackend::fill_pattern(Buffer b, uint64_t pattern, int width) {
  const size_t words = b.bytes / width;
  const unsigned blocks = blocks_for(int64_t(words));
  auto s = cudaStream_t(stream_);
  const bool aligned = reinterpret_cast<uintptr_t>(b.data) % width == 0;
  if (aligned && width == 8)
    pattern_words_kernel<<<blocks, kThreads, 0, s>>>(reinterpret_cast<uint64_t*>(b.data), words, pattern);
  else if (aligned && width == 4)
    pattern_words_kernel<<<blocks, kThreads, 0, s>>>(reinterpret_cast<uint32_t*>(b.data), words, uint32_t(pattern));
  else if (aligned && width == 2)
    pattern_words_kernel<<<blocks, kThreads, 0, s>>>(reinterpret_cast<uint16_t*>(b.data), words, uint16_t(pattern));
  else
    pattern_kernel<<<blocks, kThreads, 0, s>>>(b.data, words, pattern, width);
  check_cuda(cudaGetLastError(), "fill_pattern launch");
}

void CudaBackend::fill_tensor(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed, uint32_t tensor) {
  if (g.count() == 0) return;
  const cuda_walk::Launch l = cuda_walk::launch_for(g.rows(), g.cols());
  auto s = cudaStream_t(stream_);
  if (g.dtype == DType::f32) tensor_kernel<int(DType::f32)><<<l.grid, l.block, 0, s>>>(b.data, g, p, seed, tensor);
  else if (g.dtype == DType::f16) tensor_kernel<int(DType::f16)><<<l.grid, l.block, 0, s>>>(b.data, g, p, seed, tensor);
  else if (g.dtype == DType::bf16) tensor_kernel<int(DType::bf16)><<<l.grid, l.block, 0, s>>>(b.data, g, p, seed, tensor);
  else if (g.dtype == DType::f64) tensor_kernel<int(DType::f64)><<<l.grid, l.block, 0, s>>>(b.data, g, p, seed, tensor);
  else tensor_kernel<-1><<<l.grid, l.block, 0, s>>>(b.data, g, p, seed, tensor);
  check_cuda(cudaGetLastError(), "fill_tensor launch");
}

void CudaBackend::fill_patched(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed, uint32_t tensor) {
  const int64_t n = p.patch.covered(g.cols());
  if (g.count() == 0 || n == 0) return;
  patch_kernel<<<blocks_for(n), kThreads, 0, cudaStream_t(stream_)>>>(b.data, g, p, seed, tensor);
  check_cuda(cudaGetLastError(), "fill_patched launch");
}

void CudaBackend::copy_rotated(Buffer dst, Buffer src, const TensorGeom& g, const Rotation& rot) {
  if (g.count() == 0) return;
  const cuda_walk::Launch l = cuda_walk::launch_for(g.rows(), g.cols());
  copy_rotated_kernel<<<l.grid, l.block, 0, cudaStream_t(stream_)>>>(dst.data, src.data, g, rot);
  check_cuda(cudaGetLastError(), "copy_rotated launch");
}

void CudaBackend::fill_constant(Buffer b, const TensorGeom& g, uint64_t bits) {
  if (g.count() == 0) return;
  if (g.dense()) {  // every element of [offset, span): the pattern's word stores (the walk took 4x as long)
    const size_t size = size_t(dtype_bytes(g.dtype));
    return fill_pattern(Buffer{b.data + size_t(g.offset) * size, size_t(g.count()) * size, -1, 0}, bits, int(size));
  }
  const cuda_walk::Launch l = cuda_walk::launch_for(g.rows(), g.cols());
  constant_kernel<<<l.grid, l.block, 0, cudaStream_t(stream_)>>>(b.data, g, bits);
  check_cuda(cudaGetLastError(), "fill_constant launch");
}

void CudaBackend::copy_elements(Buffer dst, Buffer src, const TensorGeom& g) {
  if (g.count() == 0) return;
  const cuda_walk::Launch l = cuda_walk::launch_for(g.rows(), g.cols());
  copy_elements_kernel<<<l.grid, l.block, 0, cudaStream_t(stream_)>>>(dst.data, src.data, g);
  check_cuda(cudaGetLastError(), "copy_elements launch");
}

void CudaBackend::read(const void* p, size_t bytes, void* host) {
  if (!bytes) return;
  check_cuda(cudaMemcpyAsync(host, p, bytes, cudaMemcpyDeviceToHost, cudaStream_t(stream_)), "read");
  check_cuda(cudaStreamSynchronize(cudaStream_t(stream_)), "read sync");
}

CompareStats CudaBackend::compare(const Tolerance& tol, const TensorGeom& g, const std::byte* out, const double* ref,
                                  const double* bound, const double* terms, const ClassRefs& classes) {
  return comparer_.compare(stream_, tol, g, out, ref, bound, terms, classes);
}

void CudaBackend::download(Buffer b, std::byte* host) {
  check_cuda(cudaMemcpyAsync(host, b.data, b.bytes, cudaMemcpyDeviceToHost, cudaStream_t(stream_)), "download");
  check_cuda(cudaStreamSynchronize(cudaStream_t(stream_)), "download sync");
}

void CudaBackend::download_range(Buffer b, size_t offset, size_t bytes, std::byte* host) {
  if (offset > b.bytes || bytes > b.bytes - offset) throw InfraError("download_range past the buffer's end");
  check_cuda(cudaMemcpyAsync(host, b.data + offset, bytes, cudaMemcpyDeviceToHost, cudaStream_t(stream_)),
             "download_range");
  check_cuda(cudaStreamSynchronize(cudaStream_t(stream_)), "download_range sync");
}

void CudaBackend::upload(Buffer b, const std::byte* host) {
  check_cuda(cudaMemcpyAsync(b.data, host, b.bytes, cudaMemcpyHostToDevice, cudaStream_t(stream_)), "upload");
}

void CudaBackend::copy(Buffer dst, Buffer src) {
  check_cuda(cudaMemcpyAsync(dst.data, src.data, src.bytes, cudaMemcpyDeviceToDevice, cudaStream_t(stream_)), "copy");
}

std::string CudaBackend::synchronize() {
  cudaError_t e = cudaStreamSynchronize(cudaStream_t(stream_));
  if (e == cudaSuccess) e = cudaDeviceSynchronize();  // work the candidate put on other streams
  cudaError_t last = cudaGetLastError();
  if (e == cudaSuccess) e = last;
  return e == cudaSuccess ? std::string{} : std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

}  // namespace assay
