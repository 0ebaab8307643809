#include "exec/guarded_tensor.h"

#include <algorithm>

#include "core/error.h"
#include "exec/patterns.h"

namespace assay {

GuardedTensor::GuardedTensor(Backend& backend, const TensorGeom& g, Allocation alloc)
    : backend_(backend), geom_(g), guard_(alloc == Allocation::exact ? 0 : kGuardBytes) {
  size_t data_bytes = size_t(g.span()) * dtype_bytes(g.dtype);
  // An empty tensor still gets an address: one element, which holds the canary.
  buffer_ = alloc == Allocation::exact ? backend.allocate_exact(std::max<size_t>(data_bytes, dtype_bytes(g.dtype)))
                                    : backend.allocate((kGuardBytes + data_bytes + 7) / 8 * 8 + kGuardBytes);
}

GuardedTensor::~GuardedTensor() {
  backend_.release(buffer_);
  if (expected_.data) backend_.release(expected_);
}

namespace {
// Below this a buffer is painted and checked whole: one launch over it takes
// no longer than either guard's.
constexpr size_t kGuardsOnlyFrom = size_t(1) << 20;
Buffer range(Buffer b, size_t begin, size_t end) { return Buffer{b.data + begin, end - begin, -1, 0}; }
}  // namespace

bool GuardedTensor::guards_only() const { return buffer_.bytes >= kGuardsOnlyFrom && geom_.dense(); }
size_t GuardedTensor::elements_begin() const { return guard_ + size_t(geom_.offset) * dtype_bytes(geom_.dtype); }
size_t GuardedTensor::elements_end() const { return guard_ + size_t(geom_.span()) * dtype_bytes(geom_.dtype); }

void GuardedTensor::paint_canary() { backend_.fill_pattern(buffer_, canary_bits(geom_.dtype), dtype_bytes(geom_.dtype)); }

// The element size divides both ranges' starts, so the pattern lies as a
// whole paint lays it.
void GuardedTensor::paint_canary_around() {
  if (!guards_only()) return paint_canary();
  const uint64_t canary = canary_bits(geom_.dtype);
  const int width = dtype_bytes(geom_.dtype);
  if (elements_begin() > 0) backend_.fill_pattern(range(buffer_, 0, elements_begin()), canary, width);
  if (elements_end() < buffer_.bytes) backend_.fill_pattern(range(buffer_, elements_end(), buffer_.bytes), canary, width);
}

std::vector<std::byte> GuardedTensor::download() const {
  std::vector<std::byte> image(buffer_.bytes);
  backend_.download(buffer_, image.data());
  return image;
}

std::optional<size_t> GuardedTensor::first_damage(Buffer b) {
  const std::vector<Probe> probes = damage_probes(b);
  std::vector<BufferPair> pairs;
  for (const Probe& p : probes) pairs.push_back(p.pair);
  const std::vector<std::optional<size_t>> diff = backend_.first_differences(pairs.data(), pairs.size());
  std::optional<size_t> first;
  for (size_t k = 0; k < probes.size(); ++k)
    if (diff[k] && (!first || probes[k].at + *diff[k] < *first)) first = probes[k].at + *diff[k];
  return first;
}

std::vector<GuardedTensor::Probe> GuardedTensor::damage_probes(Buffer b) {
  if (b.bytes != buffer_.bytes) throw InfraError("a guard check of a buffer of another size");
  // Painted once: copy_elements only ever writes the elements, so the
  // guards and gaps of expected_ hold the canary from then on.
  if (!expected_.data) {
    expected_ = backend_.allocate(buffer_.bytes);
    backend_.fill_pattern(expected_, canary_bits(geom_.dtype), dtype_bytes(geom_.dtype));
  }
  if (guards_only()) {
    const size_t begin = elements_begin(), end = elements_end();
    std::vector<Probe> probes;
    if (begin > 0) probes.push_back({{range(expected_, 0, begin), range(b, 0, begin)}, 0});
    if (end < b.bytes) probes.push_back({{range(expected_, end, b.bytes), range(b, end, b.bytes)}, end});
    return probes;
  }
  TensorGeom g = geom_;
  g.offset += int64_t(guard_ / dtype_bytes(g.dtype));  // from the buffer's start
  backend_.copy_elements(expected_, b, g);
  return {Probe{{expected_, b}, 0}};
}

}  // namespace assay
