// Device memory for the cuda backend, kept in whole allocations that are
// reused between cases. Each buffer is its own cudaMalloc block (never a
// slice of a shared one) so that a worker process can map exactly that
// buffer through a CUDA IPC handle and nothing of the harness's beside it.
// Blocks go back to a free list, not to the device: cudaMalloc/cudaFree per
// case would synchronise the GPU, and a worker would have to re-map each new
// block. The logic is plain host code; the device calls are injected, so it
// is tested without a GPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace assay {

struct Block {
  std::byte* data = nullptr;
  size_t bytes = 0;  // the size class, >= what was asked for
  uint64_t id = 0;   // unique for the life of the cache; a worker keys its mappings on it
};

class BlockCache {
 public:
  struct Device {
    std::function<std::byte*(size_t)> allocate;  // nullptr when the device is out of memory
    std::function<void(std::byte*)> free;
    // Others must unmap blocks before they are freed: called with their ids.
    std::function<void(const std::vector<uint64_t>& ids)> before_free;
  };
  // keep: cached bytes beyond this go back to the device as soon as a block
  // is given back, so that a run does not sit on memory other runs sharing
  // the GPU wait for (only huge cases leave that much).
  explicit BlockCache(Device device, size_t keep = SIZE_MAX) : device_(std::move(device)), keep_(keep) {}
  ~BlockCache();  // frees everything, live blocks too

  // nullopt when even an empty cache cannot get the memory.
  std::optional<Block> take(size_t bytes);
  void give_back(std::byte* data);  // trims when more than `keep` is cached
  // The live block that contains p.
  std::optional<Block> owner_of(const void* p) const;
  // Frees every cached (not live) block.
  void trim();

  size_t live_bytes() const { return live_bytes_; }
  size_t cached_bytes() const { return cached_bytes_; }

  // Size classes: whole 2 MiB pages (the device's allocation granule, so no
  // two blocks share a page), then 1/8 steps of the power of two below.
  static size_t size_class(size_t bytes);

 private:
  Device device_;
  size_t keep_;
  std::map<std::byte*, Block> live_;       // by address
  std::multimap<size_t, Block> cached_;    // by size
  size_t live_bytes_ = 0, cached_bytes_ = 0;
  uint64_t next_id_ = 1;
};

}  // namespace assay
