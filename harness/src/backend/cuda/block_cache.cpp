#include "backend/cuda/block_cache.h"

#include <bit>

namespace assay {

size_t BlockCache::size_class(size_t bytes) {
  constexpr size_t page = size_t(2) << 20;
  if (bytes <= page) return page;
  size_t step = std::max(page, std::bit_floor(bytes) / 8);
  return (bytes + step - 1) / step * step;
}

std::optional<Block> BlockCache::take(size_t bytes) {
  const size_t want = size_class(bytes);
  // A cached block up to a quarter larger is as good as a new one.
  auto it = cached_.lower_bound(want);
  if (it != cached_.end() && it->first <= want + want / 4) {
    Block b = it->second;
    cached_.erase(it);
    cached_bytes_ -= b.bytes;
    live_.emplace(b.data, b);
    live_bytes_ += b.bytes;
    return b;
  }
  std::byte* p = device_.allocate(want);
  if (!p && !cached_.empty()) {
    trim();
    p = device_.allocate(want);
  }
  if (!p) return std::nullopt;
  Block b{p, want, next_id_++};
  live_.emplace(p, b);
  live_bytes_ += want;
  return b;
}

BlockCache::~BlockCache() {
  trim();
  for (auto& [data, b] : live_) device_.free(data);
}

void BlockCache::give_back(std::byte* data) {
  auto it = live_.find(data);
  if (it == live_.end()) return;
  cached_.emplace(it->second.bytes, it->second);
  cached_bytes_ += it->second.bytes;
  live_bytes_ -= it->second.bytes;
  live_.erase(it);
  if (cached_bytes_ > keep_) trim();
}

std::optional<Block> BlockCache::owner_of(const void* p) const {
  auto q = static_cast<const std::byte*>(p);
  auto it = live_.upper_bound(const_cast<std::byte*>(q));
  if (it == live_.begin()) return std::nullopt;
  --it;
  if (q >= it->second.data + it->second.bytes) return std::nullopt;
  return it->second;
}

void BlockCache::trim() {
  if (cached_.empty()) return;
  if (device_.before_free) {
    std::vector<uint64_t> ids;
    for (auto& [size, b] : cached_) ids.push_back(b.id);
    device_.before_free(ids);
  }
  for (auto& [size, b] : cached_) device_.free(b.data);
  cached_.clear();
  cached_bytes_ = 0;
}

}  // namespace assay
