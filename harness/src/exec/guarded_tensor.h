// One tensor in its own allocation: [guard | data span | guard]. Guards and
// the gaps between rows (padding) hold the canary; the executor checks them
// after every call to catch out-of-bounds writes.
#pragma once
#include <optional>
#include <vector>

#include "backend/backend.h"
#include "core/tensor_geom.h"

namespace assay {

inline constexpr size_t kGuardBytes = 1024;  // keeps the data start 256-byte aligned

class GuardedTensor {
 public:
  GuardedTensor(Backend& backend, const TensorGeom& g);  // throws InfraError
  ~GuardedTensor();
  GuardedTensor(const GuardedTensor&) = delete;
  GuardedTensor& operator=(const GuardedTensor&) = delete;

  const TensorGeom& geom() const { return geom_; }
  std::byte* data() const { return buffer_.data + kGuardBytes; }  // backend address
  Buffer buffer() const { return buffer_; }

  void paint_canary();                                  // whole buffer
  std::vector<std::byte> download() const;              // whole buffer, host copy
  // Data start inside a host image from download().
  static const std::byte* data_in(const std::vector<std::byte>& image) { return image.data() + kGuardBytes; }
  // First byte (offset into the image) outside the elements that differs from
  // the canary, if any.
  std::optional<size_t> first_damage(const std::vector<std::byte>& image) const;
  // First byte inside the elements that differs between two images.
  std::optional<size_t> first_element_change(const std::vector<std::byte>& before,
                                             const std::vector<std::byte>& after) const;

 private:
  // Calls f(begin, end) for each byte range of the image that holds elements.
  template <class F> void for_each_element_run(F&& f) const;
  Backend& backend_;
  TensorGeom geom_;
  Buffer buffer_;
};

}  // namespace assay
