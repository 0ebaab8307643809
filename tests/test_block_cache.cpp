// The cuda backend's block cache, with a fake device: reuse, size classes,
// lookups by address, and freeing only after the unmap hook ran.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <vector>

#include "backend/cuda/block_cache.h"

using namespace assay;

namespace {

struct FakeDevice {
  size_t capacity, used = 0;
  int allocations = 0, frees = 0, hooks = 0;
  std::vector<uint64_t> unmapped;  // the ids the hook was given
  std::vector<std::pair<std::byte*, size_t>> blocks;
  BlockCache::Device device() {
    return {[this](size_t n) -> std::byte* {
              if (used + n > capacity) return nullptr;
              used += n, ++allocations;
              auto* p = static_cast<std::byte*>(std::malloc(n));
              blocks.push_back({p, n});
              return p;
            },
            [this](std::byte* p) {
              for (auto& [q, n] : blocks)
                if (q == p) used -= n;
              ++frees, std::free(p);
            },
            [this](const std::vector<uint64_t>& ids) {
              ++hooks;
              unmapped.insert(unmapped.end(), ids.begin(), ids.end());
            }};
  }
};

}  // namespace

TEST_CASE("size classes are whole 2 MiB pages, then eighths of a power of two", "[block_cache]") {
  const size_t mib = size_t(1) << 20;
  CHECK(BlockCache::size_class(1) == 2 * mib);
  CHECK(BlockCache::size_class(2 * mib) == 2 * mib);
  CHECK(BlockCache::size_class(2 * mib + 1) == 4 * mib);
  CHECK(BlockCache::size_class(64 * mib + 1) == 72 * mib);  // step 64/8 = 8 MiB
  for (size_t n : {size_t(3), 5 * mib + 7, 100 * mib, size_t(9) << 30}) {
    size_t c = BlockCache::size_class(n);
    CHECK(c >= n);
    CHECK(c % (2 * mib) == 0);
    CHECK(double(c) <= std::max(double(n) * 1.125, double(2 * mib)) + 2 * mib);
  }
}

TEST_CASE("released blocks are reused, not freed, and keep their id", "[block_cache]") {
  FakeDevice fake{size_t(1) << 30};
  BlockCache cache(fake.device());
  Block a = *cache.take(1000), b = *cache.take(3 << 20);
  CHECK(a.id != b.id);
  cache.give_back(a.data);
  Block again = *cache.take(5000);  // same size class
  CHECK(again.data == a.data);
  CHECK(again.id == a.id);
  CHECK(fake.allocations == 2);
  CHECK(fake.frees == 0);
  CHECK(cache.owner_of(b.data + 12345)->id == b.id);
  CHECK_FALSE(cache.owner_of(b.data + b.bytes).has_value());
}

TEST_CASE("out of memory frees the cache, after the unmap hook, and retries", "[block_cache]") {
  FakeDevice fake{size_t(8) << 20};
  {
    BlockCache cache(fake.device());
    Block a = *cache.take(6 << 20);
    cache.give_back(a.data);
    CHECK(fake.hooks == 0);
    Block b = *cache.take(4 << 20);  // 6 MiB cached + 4 MiB > 8 MiB: trim first
    CHECK(fake.hooks == 1);
    CHECK(fake.unmapped == std::vector<uint64_t>{a.id});  // the worker is told which mapping to close
    CHECK(fake.frees == 1);
    CHECK(b.id != a.id);
    CHECK_FALSE(cache.owner_of(a.data + 1).has_value());
    CHECK_FALSE(cache.take(16 << 20).has_value());  // more than the device has: nullopt, no throw
  }
  CHECK(fake.used == 0);  // the destructor gave everything back
}
