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

void GuardedTensor::paint_canary() { backend_.fill_pattern(buffer_, canary_bits(geom_.dtype), dtype_bytes(geom_.dtype)); }

std::vector<std::byte> GuardedTensor::download() const {
  std::vector<std::byte> image(buffer_.bytes);
  backend_.download(buffer_, image.data());
  return image;
}

std::optional<size_t> GuardedTensor::first_damage(Buffer b) { return backend_.first_difference(damage_probe(b), b); }

Buffer GuardedTensor::damage_probe(Buffer b) {
  if (b.bytes != buffer_.bytes) throw InfraError("a guard check of a buffer of another size");
  // Painted once: copy_elements only ever writes the elements, so the
  // guards and gaps of expected_ hold the canary from then on.
  if (!expected_.data) {
    expected_ = backend_.allocate(buffer_.bytes);
    backend_.fill_pattern(expected_, canary_bits(geom_.dtype), dtype_bytes(geom_.dtype));
  }
  TensorGeom g = geom_;
  g.offset += int64_t(guard_ / dtype_bytes(g.dtype));  // from the buffer's start
  backend_.copy_elements(expected_, b, g);
  return expected_;
}

}  // namespace assay
