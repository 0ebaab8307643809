// A backend owns memory, value generation and synchronisation for one kind of
// device. The pipeline (executor, judge) is written once against this
// interface; cuda and host differ only behind it.
#pragma once
#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <dlpack/dlpack.h>

#include "case/values.h"
#include "core/tensor_geom.h"
#include "judge/element_check.h"
#include "spec/spec.h"

namespace assay {

struct Buffer {  // an allocation in the backend's memory (device or host address)
  std::byte* data = nullptr;
  size_t bytes = 0;
  int fd = -1;       // host: the memfd behind it, so a worker process can map it too
  uint64_t id = 0;   // cuda: the allocation's id, so a worker maps each one once
};

// Where a reference hands over its results: in host memory (dumps,
// baselines, tests), or where the backend's data lives, for judging there
// (Backend::compare): on cuda no m x n array then crosses to the host.
enum class ResultsIn { host, backend };

inline constexpr size_t kIpcHandleBytes = 64;  // sizeof(cudaIpcMemHandle_t)

struct BufferPair {  // two same-sized buffers to compare
  Buffer x, y;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  virtual DLDevice device() const = 0;
  virtual void* stream() = 0;  // cudaStream_t, or nullptr on the host
  // Bytes this backend is willing to hold at once for one case. On cuda it
  // is this run's share of the device (docs/cases.md, "Device memory"): the
  // same whatever other processes hold, so a run draws the same cases alone
  // or beside others.
  virtual size_t memory_budget() const = 0;

  // The device's memory is shared with other processes: these keep this run
  // inside its share and let a busy device be waited for (exec/oom_retry.h).
  // Before a case of `bytes`: where this run's own usage (itself and its
  // workers) and the case would pass its share, gives back what it caches;
  // throws OutOfMemory when the device has no room for the case now.
  virtual void make_room(double /*bytes*/) {}
  // Gives back to the device every cached buffer and pooled scratch.
  virtual void release_cached() {}
  // One line of figures for an out-of-memory report: this run's usage, the
  // device's free and total memory, the share. Empty where not known.
  virtual std::string memory_figures() { return {}; }

  // Throws InfraError when the memory cannot be had.
  virtual Buffer allocate(size_t bytes) = 0;
  // An allocation of exactly `bytes` (one at least), its own: not a slice of
  // a pooled block, not rounded up, so that a memory checker (memcheck,
  // valgrind) sees any access past it. For replays (docs/isolation.md); such a
  // buffer cannot be shared with a worker (owner_of does not know it).
  virtual Buffer allocate_exact(size_t bytes) = 0;
  virtual void release(Buffer& b) = 0;  // either kind

  // Repeat the low `width` bytes of `pattern` over the whole buffer.
  virtual void fill_pattern(Buffer b, uint64_t pattern, int width) = 0;
  // Every element of g (inside b) gets the recipe's value for (seed, tensor).
  virtual void fill_tensor(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed,
                           uint32_t tensor) = 0;
  // fill_tensor for a buffer that holds this draw already but for the
  // elements p.patch covers (the sparse change of a case's call 3: exec/
  // executor.cpp): only those are written. By default the whole fill.
  virtual void fill_patched(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed, uint32_t tensor) {
    fill_tensor(b, g, p, seed, tensor);
  }
  // A relabelled draw from the plain one (Rotation, case/values.h): element
  // (r, c) of g in dst gets src's element (rot.source_row(r),
  // rot.source_col(c)), so dst holds src's values moved round (a copy: a
  // draw computes every value again). dst and src are distinct buffers of
  // one layout; g has no broadcast dimension.
  virtual void copy_rotated(Buffer dst, Buffer src, const TensorGeom& g, const Rotation& rot) = 0;
  // Every element of g gets the same bits (the poison pattern).
  virtual void fill_constant(Buffer b, const TensorGeom& g, uint64_t bits) = 0;
  virtual void download(Buffer b, std::byte* host) = 0;  // whole buffer
  // `bytes` bytes from `offset` into b (a few elements of a buffer that may
  // be many GiB: the executor's looks at earlier outputs).
  virtual void download_range(Buffer b, size_t offset, size_t bytes, std::byte* host) = 0;
  virtual void upload(Buffer b, const std::byte* host) = 0;  // whole buffer; queued (synchronize waits)
  virtual void copy(Buffer dst, Buffer src) = 0;         // same size
  // Offset of the first byte where two same-sized buffers differ, computed
  // where the data lives (inputs can be many GiB: no download for the check).
  virtual std::optional<size_t> first_difference(Buffer x, Buffer y) = 0;
  // first_difference of each pair, in one round trip with the device (a
  // call's input, guard and repeat checks together).
  virtual std::vector<std::optional<size_t>> first_differences(const BufferPair* pairs, size_t count) {
    std::vector<std::optional<size_t>> out;
    for (size_t k = 0; k < count; ++k) out.push_back(first_difference(pairs[k].x, pairs[k].y));
    return out;
  }
  // first_differences without waiting for the answer: queue_differences
  // queues the check, queued_differences reads its answer. On cuda the
  // answer is copied back in stream order, so a wait the caller makes in
  // between (a comparison's) brings it along and the read waits for
  // nothing. One queued check at a time; by default it is answered at once.
  virtual void queue_differences(const BufferPair* pairs, size_t count) { queued_ = first_differences(pairs, count); }
  virtual std::vector<std::optional<size_t>> queued_differences() { return std::exchange(queued_, {}); }
  // The elements of g (offsets from the buffers' starts) from src into dst
  // (the guard check: exec/guarded_tensor.h).
  virtual void copy_elements(Buffer dst, Buffer src, const TensorGeom& g) = 0;
  // `bytes` of this backend's memory at p into host memory (reference
  // scratch and outputs for dumps, and for the ops that judge on the host).
  virtual void read(const void* p, size_t bytes, void* host) = 0;
  // An output judged against its reference where the data lives, by
  // judge/element_check.h's rules (judge/compare.h on the host, a kernel on
  // cuda): only the counts, maxima and first bad elements come back. Every
  // pointer in this backend's memory: out at the output's data start
  // (geometry g); ref, bound, terms (nullable) and each class reference
  // g.count() doubles, row-major.
  virtual CompareStats compare(const Tolerance& tol, const TensorGeom& g, const std::byte* out, const double* ref,
                               const double* bound, const double* terms, const ClassRefs& classes) = 0;

  // The allocation that contains p, for sharing it with a worker process;
  // nullopt if p is not inside one of this backend's live buffers.
  virtual std::optional<Buffer> owner_of(const void* p) const = 0;
  // cuda: writes the CUDA IPC handle of the allocation b (from owner_of);
  // false where buffers are shared by fd instead.
  virtual bool ipc_handle(const Buffer&, unsigned char (&)[kIpcHandleBytes]) { return false; }
  // Called before the backend gives buffers back to the device, with their
  // ids: a process that maps them must unmap them first (CUDA IPC requires
  // it). Every worker of the run registers its own (assay bench has two at
  // once); add returns the key that removes it.
  using UnmapHook = std::function<void(const std::vector<uint64_t>& ids)>;
  virtual int add_unmap_hook(UnmapHook) { return 0; }
  virtual void remove_unmap_hook(int) {}

  // Waits for all queued work. Returns "" or the error the device reported
  // (for CUDA: the first error, sticky or not, since the last call).
  virtual std::string synchronize() = 0;

  // A batch of element work: between begin_batch and end_batch the fills,
  // paints and copies of small buffers (fill_pattern, fill_tensor,
  // fill_constant, copy) may be held and launched together at its end, a
  // launch per wave of independent work instead of one each (cuda: a small
  // case's set-up is some thirty of them). Work on one buffer keeps the
  // order it was asked in. Any other call of the backend launches what is
  // held first; work put on stream() directly is not ordered after it until
  // end_batch. Batches nest (the outermost end launches). By default every
  // call launches at once.
  virtual void begin_batch() {}
  virtual void end_batch() {}

 private:
  std::vector<std::optional<size_t>> queued_;  // the default queue_differences' answer
};

// A batch (Backend::begin_batch) for the life of a scope: ends however the
// scope is left (end() at the normal end reports a failure to launch).
class BatchScope {
 public:
  explicit BatchScope(Backend& be) : be_(be) { be_.begin_batch(); }
  ~BatchScope() {
    if (open_) try {
        be_.end_batch();
      } catch (...) {  // the scope is being left by another exception: that one counts
      }
  }
  void end() {
    open_ = false;
    be_.end_batch();
  }
  BatchScope(const BatchScope&) = delete;
  BatchScope& operator=(const BatchScope&) = delete;

 private:
  Backend& be_;
  bool open_ = true;
};

// `count` doubles in a backend's memory for one reference call (its blocks'
// results), released with it.
class BackendArray {
 public:
  BackendArray(Backend& be, size_t count) : be_(be), b_(be.allocate(std::max<size_t>(count, 1) * sizeof(double))) {}
  ~BackendArray() { be_.release(b_); }
  BackendArray(const BackendArray&) = delete;
  BackendArray& operator=(const BackendArray&) = delete;
  double* data() const { return reinterpret_cast<double*>(b_.data); }
  // The first `count` in host memory, for `where`: themselves when they are
  // wanted where the backend's data lives or that is host memory, else
  // copied into `host`.
  double* handed(ResultsIn where, size_t count, std::vector<double>& host) const {
    if (where == ResultsIn::backend || be_.kind() == BackendKind::host) return data();
    host.resize(count);
    be_.read(data(), count * sizeof(double), host.data());
    return host.data();
  }

 private:
  Backend& be_;
  Buffer b_;
};

// The cuda backend needs a GPU; make_backend throws InfraError without one
// (OutOfMemory when the device has no memory for its context). On cuda,
// device_memory_share is the run's share in bytes; 0: ASSAY_DEVICE_MEMORY_GIB
// or, without it, kDefaultDeviceShare of the device's total memory.
std::unique_ptr<Backend> make_backend(BackendKind kind, size_t device_memory_share = 0);
inline constexpr double kDefaultDeviceShare = 0.8;
// True when a CUDA device can be used; `why` says why not.
bool cuda_available(std::string* why = nullptr);
// "sm_90" for the current device (cuda only).
std::string cuda_arch();

}  // namespace assay
