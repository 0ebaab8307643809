#include "backend/host/host_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "core/error.h"
#include "judge/compare.h"

namespace assay {

// The host runs CI's cases on 2 cores and 24 GiB: keep one case well inside that.
size_t HostBackend::memory_budget() const { return size_t(2) << 30; }

// Every buffer is a memfd mapped shared, so the worker process that runs an
// untrusted candidate maps the same pages (issue #3) and nothing else.
Buffer HostBackend::allocate(size_t bytes) {
  size_t rounded = std::max<size_t>((bytes + 4095) / 4096 * 4096, 4096);
  int fd = memfd_create("assay-buffer", MFD_CLOEXEC);
  if (fd < 0) throw InfraError(fmt::format("memfd_create: {}", std::strerror(errno)));
  if (ftruncate(fd, off_t(rounded)) != 0) {
    int e = errno;
    close(fd);
    if (e == ENOMEM || e == ENOSPC || e == EFBIG)
      throw OutOfMemory(fmt::format("host buffer of {} bytes: {}", bytes, std::strerror(e)));
    throw InfraError(fmt::format("host buffer of {} bytes: {}", bytes, std::strerror(e)));
  }
  void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    close(fd);
    if (e == ENOMEM) throw OutOfMemory(fmt::format("mmap of {} bytes: {}", bytes, std::strerror(e)));
    throw InfraError(fmt::format("mmap of {} bytes: {}", bytes, std::strerror(e)));
  }
  Buffer b{static_cast<std::byte*>(p), bytes, fd};
  live_[b.data] = b;
  return b;
}

// From the heap, at the data start's 256-byte alignment (abi.md): the size
// the heap records is the tensor's own, so valgrind or ASan names a stray
// access. A page-end placement that faults at once would need the start
// unaligned or leave up to 255 unchecked bytes past the end.
Buffer HostBackend::allocate_exact(size_t bytes) {
  bytes = std::max<size_t>(bytes, 1);
  void* p = nullptr;
  if (int e = posix_memalign(&p, 256, bytes); e != 0)
    throw OutOfMemory(fmt::format("host buffer of {} bytes: {}", bytes, std::strerror(e)));
  Buffer b{static_cast<std::byte*>(p), bytes, -1};
  exact_.insert(b.data);
  return b;
}

void HostBackend::release(Buffer& b) {
  if (b.data && exact_.erase(b.data)) {
    std::free(b.data);
  } else if (b.data) {
    live_.erase(b.data);
    munmap(b.data, std::max<size_t>((b.bytes + 4095) / 4096 * 4096, 4096));
    close(b.fd);
  }
  b = {};
}

std::optional<Buffer> HostBackend::owner_of(const void* p) const {
  auto q = static_cast<const std::byte*>(p);
  auto it = live_.upper_bound(q);
  if (it == live_.begin()) return std::nullopt;
  --it;
  if (q >= it->second.data + std::max<size_t>(it->second.bytes, 1)) return std::nullopt;
  return it->second;
}

void HostBackend::fill_pattern(Buffer b, uint64_t pattern, int width) {
  for (size_t i = 0; i + width <= b.bytes; i += width) std::memcpy(b.data + i, &pattern, width);
}

void HostBackend::fill_tensor(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed,
                              uint32_t tensor) {
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = 0; r < g.rows(); ++r)
    for (int64_t c = 0; c < g.cols(); ++c)
      if (g.representative(r, c))
        store_bits(g.dtype, b.data + g.index(r, c) * size, recipe_bits(p, g.dtype, seed, tensor, r, c));
}

void HostBackend::fill_patched(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed, uint32_t tensor) {
  const int size = dtype_bytes(g.dtype);
  for (int64_t j = 0; j < p.patch.covered(g.cols()); ++j) {
    uint64_t r = 0, c = 0;
    p.patch.position(j, r, c);
    if (r < uint64_t(g.rows()) && c < uint64_t(g.cols()) && g.representative(int64_t(r), int64_t(c)))
      store_bits(g.dtype, b.data + g.index(int64_t(r), int64_t(c)) * size, recipe_bits(p, g.dtype, seed, tensor, r, c));
  }
}

void HostBackend::copy_rotated(Buffer dst, Buffer src, const TensorGeom& g, const Rotation& rot) {
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = 0; r < g.rows(); ++r)
    for (int64_t c = 0; c < g.cols(); ++c)
      std::memcpy(dst.data + g.index(r, c) * size,
                  src.data + g.index(int64_t(rot.source_row(uint64_t(r))), int64_t(rot.source_col(uint64_t(c)))) * size,
                  size_t(size));
}

void HostBackend::fill_constant(Buffer b, const TensorGeom& g, uint64_t bits) {
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = 0; r < g.rows(); ++r)
    for (int64_t c = 0; c < g.cols(); ++c) store_bits(g.dtype, b.data + g.index(r, c) * size, bits);
}

void HostBackend::download(Buffer b, std::byte* host) { std::memcpy(host, b.data, b.bytes); }
void HostBackend::download_range(Buffer b, size_t offset, size_t bytes, std::byte* host) {
  if (offset > b.bytes || bytes > b.bytes - offset) throw InfraError("download_range past the buffer's end");
  std::memcpy(host, b.data + offset, bytes);
}
void HostBackend::upload(Buffer b, const std::byte* host) { std::memcpy(b.data, host, b.bytes); }
void HostBackend::copy(Buffer dst, Buffer src) { std::memcpy(dst.data, src.data, src.bytes); }

std::optional<size_t> HostBackend::first_difference(Buffer x, Buffer y) {
  if (std::memcmp(x.data, y.data, x.bytes) == 0) return std::nullopt;
  size_t i = 0;
  while (x.data[i] == y.data[i]) ++i;
  return i;
}

void HostBackend::copy_elements(Buffer dst, Buffer src, const TensorGeom& g) {
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = 0; r < g.rows(); ++r)
    for (int64_t c = 0; c < g.cols(); ++c) {
      const int64_t at = g.index(r, c) * size;
      std::memcpy(dst.data + at, src.data + at, size_t(size));
    }
}

void HostBackend::read(const void* p, size_t bytes, void* host) {
  if (bytes) std::memcpy(host, p, bytes);
}

CompareStats HostBackend::compare(const Tolerance& tol, const TensorGeom& g, const std::byte* out, const double* ref,
                                  const double* bound, const double* terms, const ClassRefs& classes) {
  return assay::compare(tol, g, out, ref, bound, terms, std::span<const double* const>(classes.ref, size_t(classes.count)));
}

}  // namespace assay
