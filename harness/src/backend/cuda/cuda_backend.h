// The cuda backend: buffers in device memory, fills generated on the device
// by the same functions as the host's, one stream for the candidate's work.
#pragma once
#include <array>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/block_cache.h"
#include "backend/cuda/device_compare.h"
#include "backend/cuda/device_share.h"

struct cublasContext;

namespace assay {

// One piece of a batch's element work (Backend::begin_batch); a launch's
// blocks [first_block, first_block + blocks) do it. Plain data: it is
// copied to the device as it is.
struct ElementJob {
  enum class Kind : int32_t { pattern, tensor, constant, copy };
  Kind kind = Kind::pattern;
  int32_t width = 0;               // pattern: the pattern's bytes
  std::byte* dst = nullptr;
  const std::byte* src = nullptr;  // copy
  uint64_t bytes = 0;              // pattern, copy: bytes of dst
  uint64_t bits = 0;               // pattern, constant
  uint64_t seed = 0;               // tensor
  uint32_t tensor = 0;             // tensor
  uint32_t first_block = 0, blocks = 0;
  TensorGeom g;                    // tensor, constant (offsets from dst)
  RecipeParams p;                  // tensor
};

class CudaBackend final : public Backend {
 public:
  // Throws InfraError when no GPU can be used (OutOfMemory when the device
  // has no memory left for this process's context). share: make_backend's.
  explicit CudaBackend(size_t share = 0);
  ~CudaBackend() override;
  BackendKind kind() const override { return BackendKind::cuda; }
  DLDevice device() const override { return DLDevice{kDLCUDA, device_}; }
  void* stream() override { return stream_; }
  size_t memory_budget() const override { return share_; }
  void make_room(double bytes) override;
  void release_cached() override;
  std::string memory_figures() override;
  DeviceMemoryFigures measure_memory();  // now, for this process's tree
  Buffer allocate(size_t bytes) override;
  Buffer allocate_exact(size_t bytes) override;
  void release(Buffer& b) override;
  void fill_pattern(Buffer b, uint64_t pattern, int width) override;
  void fill_tensor(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed, uint32_t tensor) override;
  void fill_patched(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed, uint32_t tensor) override;
  void copy_rotated(Buffer dst, Buffer src, const TensorGeom& g, const Rotation& rot) override;
  void fill_constant(Buffer b, const TensorGeom& g, uint64_t bits) override;
  void download(Buffer b, std::byte* host) override;
  void download_range(Buffer b, size_t offset, size_t bytes, std::byte* host) override;
  void upload(Buffer b, const std::byte* host) override;
  void copy(Buffer dst, Buffer src) override;
  std::optional<size_t> first_difference(Buffer x, Buffer y) override;
  std::vector<std::optional<size_t>> first_differences(const BufferPair* pairs, size_t count) override;
  void queue_differences(const BufferPair* pairs, size_t count) override;
  std::vector<std::optional<size_t>> queued_differences() override;
  void copy_elements(Buffer dst, Buffer src, const TensorGeom& g) override;
  void read(const void* p, size_t bytes, void* host) override;
  CompareStats compare(const Tolerance& tol, const TensorGeom& g, const std::byte* out, const double* ref,
                       const double* bound, const double* terms, const ClassRefs& classes) override;
  std::string synchronize() override;
  std::optional<Buffer> owner_of(const void* p) const override;
  bool ipc_handle(const Buffer& b, unsigned char (&handle)[kIpcHandleBytes]) override;
  int add_unmap_hook(UnmapHook hook) override {
    unmap_hooks_.emplace(++last_hook_, std::move(hook));
    return last_hook_;
  }
  void remove_unmap_hook(int key) override { unmap_hooks_.erase(key); }
  void begin_batch() override { ++batch_depth_; }
  void end_batch() override;

  cublasContext* cublas();  // the reference's handle, bound to stream()
  cuda_judge::Comparer& comparer() { return comparer_; }  // compare()'s, for references that form their figures as it reads

 private:
  int device_ = 0;
  void* stream_ = nullptr;
  cublasContext* cublas_ = nullptr;
  size_t share_ = 0;                         // bytes: this run's share of the device
  std::unique_ptr<GpuProcessList> processes_;  // NVML; null where it cannot be had
  std::string no_processes_;                   // why not
  // first_differences' answers: device words and their pinned host copy;
  // a queued check's (queue_differences) have their own.
  struct DifferenceAnswers {
    unsigned long long* device = nullptr;
    unsigned long long* host = nullptr;
    size_t capacity = 0, count = 0;
  };
  DifferenceAnswers diff_, queued_diff_;
  // Queues the check of `count` pairs and the copy of its answer into a.host.
  void launch_differences(const BufferPair* pairs, size_t count, DifferenceAnswers& a);
  static std::vector<std::optional<size_t>> answers(const DifferenceAnswers& a);
  std::map<int, UnmapHook> unmap_hooks_;  // one per worker that maps this backend's blocks
  int last_hook_ = 0;
  std::unique_ptr<BlockCache> blocks_;
  cuda_judge::Comparer comparer_;
  std::set<std::byte*> exact_;  // allocate_exact's: each its own cudaMalloc, freed on release
  std::map<uint64_t, std::array<unsigned char, kIpcHandleBytes>> ipc_handles_;  // by block id

  // The batch (begin_batch): jobs held, each job's wave (the first after
  // every held job that touches one of its buffers), and per block the last
  // wave that writes it and that reads it.
  int batch_depth_ = 0;
  std::vector<ElementJob> jobs_;
  std::vector<int> job_wave_;
  struct Uses {
    int written = -1, read = -1;
  };
  std::unordered_map<const std::byte*, Uses> uses_;  // by block start
  ElementJob* jobs_pinned_ = nullptr;  // staging for the upload, and the device's copy
  ElementJob* jobs_device_ = nullptr;
  size_t jobs_capacity_ = 0;
  void* jobs_uploaded_ = nullptr;      // cudaEvent_t: the staging may be written again
  // Holds `job` (work units: elements or words) where a batch is open and it
  // is small; false: the caller launches it now (what is held went first).
  bool hold(ElementJob job, int64_t units);
  void launch_held();  // every held job, a launch per wave
  const std::byte* block_of(const void* p) const;
};

// Throws InfraError with the CUDA error text when `status` is not success.
void check_cuda(int status, const char* what);

}  // namespace assay
