#include "backend/host/host_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "core/error.h"

namespace assay {

// The host runs CI's cases on 2 cores and 24 GiB: keep one case well inside that.
size_t HostBackend::memory_budget() const { return size_t(2) << 30; }

Buffer HostBackend::allocate(size_t bytes) {
  size_t rounded = (bytes + 255) / 256 * 256;
  void* p = std::aligned_alloc(256, rounded == 0 ? 256 : rounded);
  if (!p) throw InfraError(fmt::format("host allocation of {} bytes failed", bytes));
  return Buffer{static_cast<std::byte*>(p), bytes};
}

void HostBackend::release(Buffer& b) {
  std::free(b.data);
  b = {};
}

void HostBackend::fill_pattern(Buffer b, uint64_t pattern, int width) {
  for (size_t i = 0; i + width <= b.bytes; i += width) std::memcpy(b.data + i, &pattern, width);
}

void HostBackend::fill_tensor(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed,
                              uint32_t tensor) {
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t c = 0; c < g.cols; ++c)
      store_bits(g.dtype, b.data + g.index(r, c) * size, recipe_bits(p, g.dtype, seed, tensor, r, c));
}

void HostBackend::fill_constant(Buffer b, const TensorGeom& g, uint64_t bits) {
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = 0; r < g.rows; ++r)
    for (int64_t c = 0; c < g.cols; ++c) store_bits(g.dtype, b.data + g.index(r, c) * size, bits);
}

void HostBackend::download(Buffer b, std::byte* host) { std::memcpy(host, b.data, b.bytes); }
void HostBackend::copy(Buffer dst, Buffer src) { std::memcpy(dst.data, src.data, src.bytes); }

std::optional<size_t> HostBackend::first_difference(Buffer x, Buffer y) {
  if (std::memcmp(x.data, y.data, x.bytes) == 0) return std::nullopt;
  size_t i = 0;
  while (x.data[i] == y.data[i]) ++i;
  return i;
}

}  // namespace assay
