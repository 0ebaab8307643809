#include "backend/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "backend/cuda/matrix_walk.cuh"
#include "backend/cuda/reference_scratch.h"
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
  for (DifferenceAnswers* a : {&diff_, &queued_diff_}) {
    a->capacity = 64;
    check_setup(cudaMalloc(&a->device, a->capacity * sizeof(unsigned long long)), "cudaMalloc");
    check_setup(cudaMallocHost(&a->host, a->capacity * sizeof(unsigned long long)), "cudaMallocHost");
  }
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
  launch_held();
  cuda_reference::release_recycled();  // before the trim, which gives the pool's memory back
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
  cuda_reference::release_recycled();  // freed on their streams, this one among them
  if (jobs_pinned_) cudaFreeHost(jobs_pinned_);
  if (jobs_device_) cudaFree(jobs_device_);
  if (jobs_uploaded_) cudaEventDestroy(cudaEvent_t(jobs_uploaded_));
  unmap_hooks_.clear();  // whoever added them may be gone by now
  blocks_.reset();
  for (std::byte* p : exact_) cudaFree(p);
  for (DifferenceAnswers* a : {&diff_, &queued_diff_}) {
    if (a->device) cudaFree(a->device);
    if (a->host) cudaFreeHost(a->host);
  }
  if (cublas_) cublasDestroy(cublas_);
  if (stream_) cudaStreamDestroy(cudaStream_t(stream_));
}

cublasContext* CudaBackend::cublas() {
  launch_held();  // the reference's work reads what a batch holds
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
  try {
    launch_held();  // held work may write the block, which a trim could free
  } catch (const InfraError&) {  // called from destructors: the failure shows at the next wait
  }
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

// A batch's element work (Backend::begin_batch): block b of a launch finds
// its job (the last whose first_block is at most b) and does its share with
// the job's other blocks, the types known only at run time (the jobs are
// small: a 64-bit division an element, which the walks above avoid, costs
// less than the launches it saves).
constexpr int64_t kMaxHeldUnits = int64_t(1) << 18;  // bigger work is launched alone, with a grid of its own
constexpr int64_t kMaxJobBlocks = 64;

__device__ void pattern_job(const ElementJob& j, int64_t first, int64_t step) {
  const int width = j.width;
  const uint64_t bits = j.bits;
  const int64_t words = int64_t(j.bytes / uint64_t(width));
  const bool aligned = reinterpret_cast<uintptr_t>(j.dst) % uint64_t(width) == 0;
  for (int64_t i = first; i < words; i += step) {
    std::byte* at = j.dst + i * width;
    if (aligned && width == 8) *reinterpret_cast<uint64_t*>(at) = bits;
    else if (aligned && width == 4) *reinterpret_cast<uint32_t*>(at) = uint32_t(bits);
    else if (aligned && width == 2) *reinterpret_cast<uint16_t*>(at) = uint16_t(bits);
    else memcpy(at, &bits, size_t(width));
  }
}
__device__ void copy_job(const ElementJob& j, int64_t first, int64_t step) {
  const bool aligned = (reinterpret_cast<uintptr_t>(j.dst) | reinterpret_cast<uintptr_t>(j.src)) % 16 == 0;
  const int64_t bytes = int64_t(j.bytes), words = aligned ? bytes / 16 : 0;
  for (int64_t i = first; i < words; i += step)
    reinterpret_cast<uint4*>(j.dst)[i] = reinterpret_cast<const uint4*>(j.src)[i];
  for (int64_t i = words * 16 + first; i < bytes; i += step) j.dst[i] = j.src[i];
}
// As tensor_kernel (a broadcast element once, a broadcast column's first)
// and constant_kernel do it.
__device__ void element_job(const ElementJob& j, int64_t first, int64_t step) {
  const TensorGeom& g = j.g;
  const DType t = g.dtype;
  const int size = dtype_bytes(t);
  const int64_t cs = g.col_stride();
  const bool tensor = j.kind == ElementJob::Kind::tensor;
  bool broadcast = false;
  if (tensor)
    for (int d = 0; d < g.ndim; ++d) broadcast |= g.strides[d] == 0 && g.shape[d] > 1;
  const int64_t last = tensor && cs == 0 ? 1 : g.cols(), count = g.rows() * last;
  for (int64_t e = first; e < count; e += step) {
    const int64_t r = e / last, c = e - r * last;
    if (broadcast && !g.representative(r, 0)) continue;
    std::byte* at = j.dst + (g.index(r, 0) + c * cs) * size;
    store_bits(t, at, tensor ? recipe_bits(j.p, t, j.seed, j.tensor, r, c) : j.bits);
  }
}
__global__ void __launch_bounds__(kThreads) element_jobs_kernel(const ElementJob* jobs, int count) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (jobs[mid].first_block <= blockIdx.x) lo = mid;
    else hi = mid - 1;
  }
  const ElementJob& j = jobs[lo];
  const int64_t first = int64_t(blockIdx.x - j.first_block) * blockDim.x + threadIdx.x;
  const int64_t step = int64_t(j.blocks) * blockDim.x;
  switch (j.kind) {
    case ElementJob::Kind::pattern: pattern_job(j, first, step); break;
    case ElementJob::Kind::copy: copy_job(j, first, step); break;
    case ElementJob::Kind::tensor: case ElementJob::Kind::constant: element_job(j, first, step); break;
  }
}

}  // namespace

// The block p lies in; nullptr outside the block cache (an exact
// allocation, whose ranges the batch could not tell apart: launched alone).
const std::byte* CudaBackend::block_of(const void* p) const {
  const std::optional<Block> b = blocks_->owner_of(p);
  return b ? b->data : nullptr;
}

bool CudaBackend::hold(ElementJob job, int64_t units) {
  if (batch_depth_ == 0) return false;
  const std::byte* dst = block_of(job.dst);
  const std::byte* src = job.src ? block_of(job.src) : nullptr;
  if (units > kMaxHeldUnits || !dst || (job.src && !src)) {
    launch_held();
    return false;
  }
  if (units <= 0) return true;
  job.blocks = unsigned(std::clamp<int64_t>((units + kThreads - 1) / kThreads, 1, kMaxJobBlocks));
  // After every held job that writes a buffer this one touches, or reads the one it writes.
  int wave = 0;
  if (auto it = uses_.find(dst); it != uses_.end()) wave = std::max({wave, it->second.written + 1, it->second.read + 1});
  if (src)
    if (auto it = uses_.find(src); it != uses_.end()) wave = std::max(wave, it->second.written + 1);
  Uses& d = uses_[dst];
  d.written = std::max(d.written, wave);
  if (src) {
    Uses& r = uses_[src];
    r.read = std::max(r.read, wave);
  }
  jobs_.push_back(job);
  job_wave_.push_back(wave);
  return true;
}

void CudaBackend::launch_held() {
  if (jobs_.empty()) return;
  auto s = cudaStream_t(stream_);
  const size_t n = jobs_.size();
  if (jobs_capacity_ < n) {
    if (jobs_pinned_) check_cuda(cudaFreeHost(jobs_pinned_), "cudaFreeHost");  // waits for the last upload
    if (jobs_device_) check_cuda(cudaFree(jobs_device_), "cudaFree");
    jobs_pinned_ = nullptr, jobs_device_ = nullptr, jobs_capacity_ = 0;
    const size_t capacity = std::max<size_t>(n, 2 * jobs_capacity_ + 256);
    check_cuda(cudaMallocHost(&jobs_pinned_, capacity * sizeof(ElementJob)), "cudaMallocHost");
    check_cuda(cudaMalloc(&jobs_device_, capacity * sizeof(ElementJob)), "cudaMalloc");
    jobs_capacity_ = capacity;
    if (!jobs_uploaded_) {
      cudaEvent_t e;
      check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
      jobs_uploaded_ = e;
    }
  } else {
    check_cuda(cudaEventSynchronize(cudaEvent_t(jobs_uploaded_)), "batch staging");  // the last upload has read it
  }
  struct Wave {
    size_t begin, end;
    unsigned blocks;
  };
  std::vector<Wave> waves;
  const int last = *std::max_element(job_wave_.begin(), job_wave_.end());
  size_t at = 0;
  for (int w = 0; w <= last; ++w) {
    Wave wave{at, at, 0};
    for (size_t k = 0; k < n; ++k) {
      if (job_wave_[k] != w) continue;
      ElementJob& j = jobs_pinned_[at++];
      j = jobs_[k];
      j.first_block = wave.blocks;
      wave.blocks += j.blocks;
    }
    wave.end = at;
    if (wave.end > wave.begin) waves.push_back(wave);
  }
  jobs_.clear(), job_wave_.clear(), uses_.clear();
  check_cuda(cudaMemcpyAsync(jobs_device_, jobs_pinned_, n * sizeof(ElementJob), cudaMemcpyHostToDevice, s),
             "batch upload");
  check_cuda(cudaEventRecord(cudaEvent_t(jobs_uploaded_), s), "batch upload");
  for (const Wave& w : waves)
    element_jobs_kernel<<<w.blocks, kThreads, 0, s>>>(jobs_device_ + w.begin, int(w.end - w.begin));
  check_cuda(cudaGetLastError(), "batch launch");
}

void CudaBackend::end_batch() {
  if (batch_depth_ > 0 && --batch_depth_ == 0) launch_held();
}

std::optional<size_t> CudaBackend::first_difference(Buffer x, Buffer y) {
  const BufferPair one{x, y};
  return first_differences(&one, 1).front();
}

void CudaBackend::launch_differences(const BufferPair* pairs, size_t count, DifferenceAnswers& a) {
  launch_held();
  auto s = cudaStream_t(stream_);
  if (count > a.capacity) {  // rare: a case with many tensors
    check_cuda(cudaStreamSynchronize(s), "first_differences sync");
    cudaFree(a.device), cudaFreeHost(a.host);
    a.device = nullptr, a.host = nullptr, a.capacity = 0;
    check_cuda(cudaMalloc(&a.device, count * sizeof(unsigned long long)), "cudaMalloc");
    check_cuda(cudaMallocHost(&a.host, count * sizeof(unsigned long long)), "cudaMallocHost");
    a.capacity = count;
  }
  a.count = count;
  if (count == 0) return;
  check_cuda(cudaMemsetAsync(a.device, 0xff, count * sizeof(unsigned long long), s), "first_differences");  // none
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
    difference_kernel<<<dim3(blocks_for(most), unsigned(n)), kThreads, 0, s>>>(p, a.device + first);
  }
  check_cuda(cudaGetLastError(), "first_differences launch");
  check_cuda(cudaMemcpyAsync(a.host, a.device, count * sizeof(unsigned long long), cudaMemcpyDeviceToHost, s),
             "first_differences");
}

std::vector<std::optional<size_t>> CudaBackend::answers(const DifferenceAnswers& a) {
  std::vector<std::optional<size_t>> out(a.count);
  for (size_t k = 0; k < a.count; ++k)
    if (a.host[k] != ~0ull) out[k] = size_t(a.host[k]);
  return out;
}

std::vector<std::optional<size_t>> CudaBackend::first_differences(const BufferPair* pairs, size_t count) {
  launch_differences(pairs, count, diff_);
  check_cuda(cudaStreamSynchronize(cudaStream_t(stream_)), "first_differences sync");
  return answers(diff_);
}

void CudaBackend::queue_differences(const BufferPair* pairs, size_t count) {
  launch_differences(pairs, count, queued_diff_);
}

std::vector<std::optional<size_t>> CudaBackend::queued_differences() {
  check_cuda(cudaStreamSynchronize(cudaStream_t(stream_)), "first_differences sync");  // done, when a wait came between
  std::vector<std::optional<size_t>> out = answers(queued_diff_);
  queued_diff_.count = 0;
  return out;
}

void CudaBackend::fill_pattern(Buffer b, uint64_t pattern, int width) {
  const size_t words = b.bytes / width;
  ElementJob job;
  job.kind = ElementJob::Kind::pattern, job.dst = b.data, job.bytes = b.bytes, job.bits = pattern, job.width = width;
  if (hold(job, int64_t(words))) return;
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
  ElementJob job;
  job.kind = ElementJob::Kind::tensor, job.dst = b.data, job.g = g, job.p = p, job.seed = seed, job.tensor = tensor;
  if (hold(job, g.count())) return;
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
  launch_held();
  const int64_t n = p.patch.covered(g.cols());
  if (g.count() == 0 || n == 0) return;
  patch_kernel<<<blocks_for(n), kThreads, 0, cudaStream_t(stream_)>>>(b.data, g, p, seed, tensor);
  check_cuda(cudaGetLastError(), "fill_patched launch");
}

void CudaBackend::copy_rotated(Buffer dst, Buffer src, const TensorGeom& g, const Rotation& rot) {
  launch_held();
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
  ElementJob job;
  job.kind = ElementJob::Kind::constant, job.dst = b.data, job.g = g, job.bits = bits;
  if (hold(job, g.count())) return;
  const cuda_walk::Launch l = cuda_walk::launch_for(g.rows(), g.cols());
  constant_kernel<<<l.grid, l.block, 0, cudaStream_t(stream_)>>>(b.data, g, bits);
  check_cuda(cudaGetLastError(), "fill_constant launch");
}

void CudaBackend::copy_elements(Buffer dst, Buffer src, const TensorGeom& g) {
  launch_held();
  if (g.count() == 0) return;
  const cuda_walk::Launch l = cuda_walk::launch_for(g.rows(), g.cols());
  copy_elements_kernel<<<l.grid, l.block, 0, cudaStream_t(stream_)>>>(dst.data, src.data, g);
  check_cuda(cudaGetLastError(), "copy_elements launch");
}

void CudaBackend::read(const void* p, size_t bytes, void* host) {
  launch_held();
  if (!bytes) return;
  check_cuda(cudaMemcpyAsync(host, p, bytes, cudaMemcpyDeviceToHost, cudaStream_t(stream_)), "read");
  check_cuda(cudaStreamSynchronize(cudaStream_t(stream_)), "read sync");
}

CompareStats CudaBackend::compare(const Tolerance& tol, const TensorGeom& g, const std::byte* out, const double* ref,
                                  const double* bound, const double* terms, const ClassRefs& classes) {
  launch_held();
  return comparer_.compare(stream_, tol, g, out, ref, bound, terms, classes);
}

void CudaBackend::download(Buffer b, std::byte* host) {
  launch_held();
  check_cuda(cudaMemcpyAsync(host, b.data, b.bytes, cudaMemcpyDeviceToHost, cudaStream_t(stream_)), "download");
  check_cuda(cudaStreamSynchronize(cudaStream_t(stream_)), "download sync");
}

void CudaBackend::download_range(Buffer b, size_t offset, size_t bytes, std::byte* host) {
  launch_held();
  if (offset > b.bytes || bytes > b.bytes - offset) throw InfraError("download_range past the buffer's end");
  check_cuda(cudaMemcpyAsync(host, b.data + offset, bytes, cudaMemcpyDeviceToHost, cudaStream_t(stream_)),
             "download_range");
  check_cuda(cudaStreamSynchronize(cudaStream_t(stream_)), "download_range sync");
}

void CudaBackend::upload(Buffer b, const std::byte* host) {
  launch_held();
  check_cuda(cudaMemcpyAsync(b.data, host, b.bytes, cudaMemcpyHostToDevice, cudaStream_t(stream_)), "upload");
}

void CudaBackend::copy(Buffer dst, Buffer src) {
  ElementJob job;
  job.kind = ElementJob::Kind::copy, job.dst = dst.data, job.src = src.data, job.bytes = src.bytes;
  const bool aligned = (reinterpret_cast<uintptr_t>(dst.data) | reinterpret_cast<uintptr_t>(src.data)) % 16 == 0;
  if (hold(job, int64_t(aligned ? src.bytes / 16 + 16 : src.bytes))) return;
  check_cuda(cudaMemcpyAsync(dst.data, src.data, src.bytes, cudaMemcpyDeviceToDevice, cudaStream_t(stream_)), "copy");
}

std::string CudaBackend::synchronize() {
  launch_held();
  cudaError_t e = cudaStreamSynchronize(cudaStream_t(stream_));
  if (e == cudaSuccess) e = cudaDeviceSynchronize();  // work the candidate put on other streams
  cudaError_t last = cudaGetLastError();
  if (e == cudaSuccess) e = last;
  return e == cudaSuccess ? std::string{} : std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}

}  // namespace assay
