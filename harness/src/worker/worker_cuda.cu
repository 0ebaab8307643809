// Cuda buffers in a worker: the harness's allocations are opened from their
// IPC handles once and kept (keyed by allocation id) for the worker's life;
// the harness never frees a block a worker has open (it stops the worker
// first). After each call the worker classifies how the call's work ended.
#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "worker/process_memory.h"
#include "worker/worker_device.h"

namespace assay::worker {
namespace {

std::string describe(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

// Errors after which the context is unusable: every later call fails too.
bool sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress: case cudaErrorLaunchFailure: case cudaErrorMisalignedAddress:
    case cudaErrorAssert: case cudaErrorIllegalInstruction: case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError: case cudaErrorLaunchTimeout: case cudaErrorInvalidAddressSpace:
      return true;
    default:
      return false;
  }
}

// What the worker does on the device once a call's work is done, as one
// launch: compare each output with its copy taken in stream order (any
// difference sets *flag), then the request's copies in order. Every range
// starts at offset 0 of its buffer and a thread handles the same 16 bytes of
// each, comparing before copying, so a capture of a buffer reads it before
// the next call's inputs overwrite it.
struct Range {
  unsigned char* dst;
  const unsigned char* src;
  size_t bytes;
};
struct AfterCall {
  Range compare[wire::kMaxTensors], copy[wire::kMaxCopies];  // compare: dst is the stream-ordered copy
  int num_compares = 0, num_copies = 0;
  size_t words = 0;  // 16-byte words of the longest range
  int* flag = nullptr;
};

__device__ bool operator!=(uint4 a, uint4 b) { return a.x != b.x || a.y != b.y || a.z != b.z || a.w != b.w; }
__device__ bool differs(const Range& r, size_t w) {
  if ((w + 1) * 16 <= r.bytes)
    return reinterpret_cast<const uint4*>(r.dst)[w] != reinterpret_cast<const uint4*>(r.src)[w];
  bool d = false;
  for (size_t i = w * 16; i < r.bytes; ++i) d |= r.dst[i] != r.src[i];
  return d;
}
__device__ void copy_word(const Range& r, size_t w) {
  if ((w + 1) * 16 <= r.bytes) reinterpret_cast<uint4*>(r.dst)[w] = reinterpret_cast<const uint4*>(r.src)[w];
  else for (size_t i = w * 16; i < r.bytes; ++i) r.dst[i] = r.src[i];
}

__global__ void after_call_kernel(const __grid_constant__ AfterCall a) {
  for (size_t w = blockIdx.x * size_t(blockDim.x) + threadIdx.x; w < a.words; w += size_t(gridDim.x) * blockDim.x) {
    for (int c = 0; c < a.num_compares; ++c)
      if (differs(a.compare[c], w)) *a.flag = 1;
    for (int c = 0; c < a.num_copies; ++c) copy_word(a.copy[c], w);
  }
}

// Shared memory as a call finds it: every byte 0xff (NaN in every float
// type, -1 in every integer) on every SM, so that a kernel that reads
// shared memory it never wrote (field notes: uninitialised memory that
// happens to be zero, or to hold an earlier block's right values) reads NaN
// instead of what the context's earlier kernels left. One block an SM, each
// with all the shared memory a block may have; volatile: stores that
// nothing in the kernel reads back must still be made.
__global__ void poison_shared_kernel(size_t words) {
  extern __shared__ unsigned shared_words[];
  volatile unsigned* w = shared_words;
  for (size_t i = threadIdx.x; i < words; i += blockDim.x) w[i] = ~0u;
}

class CudaDevice final : public WorkerDevice {
 public:
  CudaDevice(int device, size_t limit) : device_(device), limit_(limit) {}
  ~CudaDevice() override {
    for (auto& [id, p] : opened_) cudaIpcCloseMemHandle(p);
  }

  std::string init(bool& out_of_memory) {
    cudaError_t e = cudaSetDevice(device_);
    if (e == cudaSuccess) e = cudaFree(nullptr);  // creates the context now, not inside the first call
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    // Mapped pinned memory: the kernel sets it, no copy back.
    if (e == cudaSuccess) e = cudaHostAlloc(&flag_host_, sizeof(int), cudaHostAllocMapped);
    if (e == cudaSuccess) e = cudaHostGetDevicePointer(reinterpret_cast<void**>(&flag_), flag_host_, 0);
    out_of_memory = e == cudaErrorMemoryAllocation;
    if (e != cudaSuccess) return "worker: CUDA setup failed: " + describe(e);
    int shared = 0, sms = 0;
    if (cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_) == cudaSuccess &&
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_) == cudaSuccess &&
        cudaFuncSetAttribute(poison_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared) == cudaSuccess)
      poison_shared_bytes_ = size_t(shared), poison_blocks_ = unsigned(sms);
    cudaGetLastError();  // without the poison the calls still run
    char bus[32] = {};
    if (limit_ > 0 && cudaDeviceGetPCIBusId(bus, sizeof bus, device_) == cudaSuccess) {
      memory_ = ProcessMemory::open(bus, getpid(), note_);
      if (memory_) owned_ = memory_->used().value_or(0);
    }
    if (limit_ > 0 && !memory_) note_ = "device-memory limit not enforced: " + note_;
    return {};
  }
  const std::string& note() const override { return note_; }

  DLDevice device() const override { return DLDevice{kDLCUDA, device_}; }
  void* stream() override { return stream_; }

  std::string map(const wire::CallRequest& req, const int*, int nfds, Bases& base) override {
    if (nfds != 0) return "worker: unexpected descriptors with a cuda call";
    std::optional<uint64_t> before_opening;  // what mapping the harness's buffers adds is not the candidate's
    for (int i = 0; i < req.num_buffers; ++i) {
      auto it = opened_.find(req.buffer_ids[i]);
      if (it == opened_.end()) {
        if (memory_ && !before_opening) before_opening = memory_->used();
        cudaIpcMemHandle_t h;
        std::memcpy(&h, req.ipc_handles[i], sizeof h);
        void* p = nullptr;
        cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
        if (e != cudaSuccess) return "worker: cannot open a buffer's IPC handle: " + describe(e);
        it = opened_.emplace(req.buffer_ids[i], p).first;
      }
      base[i] = it->second;
    }
    if (before_opening)
      if (std::optional<uint64_t> now = memory_->used(); now && *now > *before_opening) owned_ += *now - *before_opening;
    return {};
  }
  void unmap(const wire::CallRequest&, Bases& base) override {
    for (void*& b : base) b = nullptr;  // mappings stay open for the next call
  }
  // What closing gives back was the harness's, not the candidate's: owned_
  // goes down by it, as it went up when the buffers were opened.
  void forget(const uint64_t* ids, int n) override {
    std::optional<uint64_t> before;
    bool closed = false;
    for (int i = 0; i < n; ++i) {
      auto it = opened_.find(ids[i]);
      if (it == opened_.end()) continue;
      if (memory_ && !closed) before = memory_->used();
      cudaIpcCloseMemHandle(it->second);
      opened_.erase(it);
      closed = true;
    }
    if (before)
      if (std::optional<uint64_t> now = memory_->used(); now && *now < *before)
        owned_ -= std::min(owned_, *before - *now);
  }

  // Room for a copy of each output buffer (the order check). It is the
  // worker's memory, not the candidate's (kept_memory leaves it out); grown
  // for a large case, it goes back once the cases are small again.
  void before_call(const wire::CallRequest& req, const Bases&) override {
    if (poison_blocks_ > 0) {
      poison_shared_kernel<<<poison_blocks_, 256, poison_shared_bytes_, stream_>>>(poison_shared_bytes_ / 4);
      if (cudaGetLastError() != cudaSuccess) poison_blocks_ = 0;  // not the candidate's error: no poison from now on
    }
    size_t need = 0;
    staging_failed_ = false;
    for_each_output_buffer(req, [&](int b) { need += req.buffer_bytes[b]; });
    if (need > staging_bytes_ || (staging_bytes_ > (size_t(256) << 20) && need < staging_bytes_ / 8)) {
      if (staging_) cudaFree(staging_);
      staging_ = nullptr, staging_bytes_ = 0;
      if (cudaMalloc(&staging_, need) == cudaSuccess) staging_bytes_ = need;
      else cudaGetLastError(), staging_failed_ = true;  // no check of stream order: the call does not count
    }
  }

  bool memory_was_short(bool call_failed) override {
    if (staging_failed_) return true;
    if (!call_failed) return false;
    if (last_error_ == cudaErrorMemoryAllocation) return true;  // an allocation of the candidate's failed
    size_t free_bytes = 0, total = 0;  // or one whose error it cleared, on a full device
    return cudaMemGetInfo(&free_bytes, &total) == cudaSuccess && free_bytes < kFullBelow;
  }

  // Timed batches: stream-ordered copies and flushes, events as timestamps.
  void queue_copy(void* dst, const void* src, size_t bytes) override {
    cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_);
  }
  // The flush buffer is the worker's, like its staging copy (not counted as the candidate's).
  std::string queue_flush(size_t bytes, unsigned salt) override {
    if (flush_bytes_ < bytes) {
      if (flush_) cudaFree(flush_);
      flush_ = nullptr, flush_bytes_ = 0;
      if (cudaError_t e = cudaMalloc(&flush_, bytes); e != cudaSuccess) {
        cudaGetLastError();
        return "worker: no device memory for the cache flush: " + describe(e);
      }
      flush_bytes_ = bytes;
    }
    cudaMemsetAsync(flush_, int(salt & 0xff), bytes, stream_);
    return {};
  }
  std::string prepare_marks(int n) override {
    while (int(events_.size()) < n) {
      cudaEvent_t e;
      if (cudaError_t r = cudaEventCreate(&e); r != cudaSuccess) return "worker: cannot create an event: " + describe(r);
      events_.push_back(e);
    }
    return {};
  }
  void mark(int i) override { cudaEventRecord(events_[size_t(i)], stream_); }
  std::string finish_batch(bool& context_lost) override {
    // Every stream: work the candidate left elsewhere is part of the batch's wall time.
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaGetLastError();
    context_lost = e != cudaSuccess && (sticky(e) || cudaDeviceSynchronize() != cudaSuccess);
    if (e != cudaSuccess) cudaGetLastError();
    return e == cudaSuccess ? std::string{} : describe(e);
  }
  double seconds_between(int a, int b) override {
    float ms = 0;
    if (cudaEventElapsedTime(&ms, events_[size_t(a)], events_[size_t(b)]) != cudaSuccess) return -1;
    return double(ms) / 1e3;
  }

  wire::CallEnd after_call(const wire::CallRequest& req, const Bases& base, std::string& message,
                           double& check_s) override {
    cudaError_t launch = cudaGetLastError();
    last_error_ = launch;
    // What a consumer ordered after the call on its stream would read.
    size_t at = 0;
    const bool staged = launch == cudaSuccess && staging_bytes_ > 0;
    if (staged)
      for_each_output_buffer(req, [&](int b) {
        cudaMemcpyAsync(staging_ + at, base[b], req.buffer_bytes[b], cudaMemcpyDeviceToDevice, stream_);
        at += req.buffer_bytes[b];
      });
    // The call's stream and whatever the candidate left on other streams.
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = launch;
    if (e != cudaSuccess) {
      cudaGetLastError();
      if (sticky(e) || cudaDeviceSynchronize() != cudaSuccess) {
        message = describe(e) + " (sticky: the worker's CUDA context is lost)";
        return wire::CallEnd::fatal;
      }
      message = describe(e);
      if (std::string failed = finish(req, base, false); !failed.empty()) return message = failed, wire::CallEnd::fatal;
      return wire::CallEnd::device_error;
    }
    const auto t0 = std::chrono::steady_clock::now();
    wire::CallEnd end = wire::CallEnd::returned;
    if (uint64_t kept = kept_memory(t0); kept > limit_) {
      message = "the candidate keeps " + std::to_string(kept >> 20) + " MiB of device memory beyond the case's "
                "buffers after the call (limit " + std::to_string(limit_ >> 20) + " MiB)";
      end = wire::CallEnd::fatal;
    } else {
      if (std::string failed = finish(req, base, staged); !failed.empty()) {
        message = failed;
        end = wire::CallEnd::fatal;
      } else if (staged && *static_cast<volatile int*>(flag_host_) != 0) {
        message = "an output changed after the work on the call's stream had finished: the kernel ran work "
                  "outside the stream it was given and did not order it before returning";
        end = wire::CallEnd::unordered_output;
      }
    }
    check_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return end;
  }

 private:
  // Device memory the worker holds beyond its context, the mapped buffers
  // and its staging copy (whole 2 MiB pages, as the driver hands them out).
  // Asked at most every 50 ms (an NVML query costs more than a tiny call):
  // what a candidate keeps only grows, so a later look still sees it.
  uint64_t kept_memory(std::chrono::steady_clock::time_point now) {
    if (!memory_ || now - last_look_ < std::chrono::milliseconds(50)) return 0;
    last_look_ = now;
    std::optional<uint64_t> used = memory_->used();
    constexpr uint64_t page = uint64_t(2) << 20;
    const uint64_t own = owned_ + (staging_bytes_ + page - 1) / page * page + (flush_bytes_ + page - 1) / page * page;
    return used && *used > own ? *used - own : 0;
  }

  template <class F> void for_each_output_buffer(const wire::CallRequest& req, F&& f) {
    bool seen[wire::kMaxBuffers] = {};
    for (int i = req.num_inputs; i < req.num_inputs + req.num_outputs; ++i) {
      int b = req.tensors[i].buffer;
      if (!seen[b]) seen[b] = true, f(b);
    }
  }
  // The order check (when `order_check`: sets *flag_host_ if an output
  // changed after its stream-ordered copy) and the request's copies, in one
  // launch and one wait; "" or why they failed.
  std::string finish(const wire::CallRequest& req, const Bases& base, bool order_check) {
    AfterCall a;
    size_t at = 0, longest = 0;
    if (order_check)
      for_each_output_buffer(req, [&](int b) {
        a.compare[a.num_compares++] = {staging_ + at, static_cast<const unsigned char*>(base[b]), req.buffer_bytes[b]};
        at += req.buffer_bytes[b];
      });
    for (int i = 0; i < req.num_copies; ++i) {
      const wire::Copy& c = req.copies[i];
      a.copy[a.num_copies++] = {static_cast<unsigned char*>(base[c.dst]), static_cast<const unsigned char*>(base[c.src]),
                                size_t(c.bytes)};
    }
    for (int i = 0; i < a.num_compares; ++i) longest = std::max(longest, a.compare[i].bytes);
    for (int i = 0; i < a.num_copies; ++i) longest = std::max(longest, a.copy[i].bytes);
    if (longest == 0) return {};
    a.words = (longest + 15) / 16, a.flag = flag_;
    *flag_host_ = 0;
    after_call_kernel<<<unsigned(std::min<size_t>((a.words + 255) / 256, 4096)), 256, 0, stream_>>>(a);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream_);
    return e == cudaSuccess ? std::string{} : "worker: checking or copying the call's buffers failed: " + describe(e);
  }

  int device_;
  size_t limit_;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> events_;  // a timed batch's timestamps
  void* flush_ = nullptr;             // what a cold run overwrites
  size_t flush_bytes_ = 0;
  std::map<uint64_t, void*> opened_;  // allocation id -> this process's mapping
  unsigned char* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  bool staging_failed_ = false;           // this call's staging copy could not be had
  size_t poison_shared_bytes_ = 0;         // poison_shared_kernel's launch: bytes a block, one block an SM
  unsigned poison_blocks_ = 0;             // 0: shared memory not poisoned (the device would not have it)
  cudaError_t last_error_ = cudaSuccess;  // what the runtime held after the candidate's call
  // Free memory below this when a call failed: the device was full (a
  // context, cuBLAS's handle and workspace need more).
  static constexpr size_t kFullBelow = size_t(512) << 20;
  std::unique_ptr<ProcessMemory> memory_;  // null: no limit, or NVML cannot tell
  uint64_t owned_ = 0;                     // the context's own memory and the mapped buffers (not staging_)
  std::chrono::steady_clock::time_point last_look_{};
  std::string note_;
  int* flag_ = nullptr;
  int* flag_host_ = nullptr;
};

}  // namespace

std::unique_ptr<WorkerDevice> cuda_device(int device, size_t memory_limit, std::string& why, bool& out_of_memory) {
  auto d = std::make_unique<CudaDevice>(device, memory_limit);
  why = d->init(out_of_memory);
  if (!why.empty()) return nullptr;
  return d;
}

}  // namespace assay::worker
