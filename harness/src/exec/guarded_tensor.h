// One tensor in its own allocation: [guard | data span | guard]. Guards and
// the gaps between rows (padding) hold the canary; the executor checks them
// after every call to catch out-of-bounds writes. The exact allocation (replays
// under a memory checker) has no guards: the allocation is the data span
// alone, base offset included, and only its padding holds the canary; a
// write past it is the checker's to see (docs/isolation.md).
#pragma once
#include <optional>
#include <vector>

#include "backend/backend.h"
#include "core/tensor_geom.h"

namespace assay {

inline constexpr size_t kGuardBytes = 1024;  // keeps the data start 256-byte aligned

enum class Allocation { guarded, exact };

class GuardedTensor {
 public:
  GuardedTensor(Backend& backend, const TensorGeom& g, Allocation alloc = Allocation::guarded);  // throws InfraError
  ~GuardedTensor();
  GuardedTensor(const GuardedTensor&) = delete;
  GuardedTensor& operator=(const GuardedTensor&) = delete;

  const TensorGeom& geom() const { return geom_; }
  size_t guard() const { return guard_; }  // bytes before the data start: kGuardBytes, or 0 when exact
  std::byte* data() const { return buffer_.data + guard_; }  // backend address
  Buffer buffer() const { return buffer_; }

  void paint_canary();  // whole buffer
  // The canary wherever no element lies, for a caller that writes every
  // element next: a large dense tensor's guards only (painting its
  // elements too took as long as drawing them), otherwise the whole buffer.
  void paint_canary_around();
  std::vector<std::byte> download() const;              // whole buffer, host copy
  // Data start inside a host image from download().
  const std::byte* data_in(const std::vector<std::byte>& image) const { return image.data() + guard_; }
  // First byte of b (this buffer, or one of its size laid out as it is: a
  // snapshot, a capture) outside the elements that no longer holds the
  // canary, if any. Computed where the data lives: b is compared with the
  // canary with b's elements copied in, so no image comes to the host.
  std::optional<size_t> first_damage(Buffer b);
  // first_damage in two steps, so that several checks share one round trip
  // (Backend::first_differences): ranges of b, each with the range it must
  // equal, queued where the data lives, and where the range starts in b.
  // A large dense tensor's are its two guards against the canary; any
  // other's is the whole buffer against the canary with b's elements
  // copied in. Valid until the next probe of this tensor.
  struct Probe {
    BufferPair pair;  // x: what y, a range of b, must equal
    size_t at;        // y's first byte in b
  };
  std::vector<Probe> damage_probes(Buffer b);

 private:
  // Large and dense: the ranges outside the elements are painted and checked alone.
  bool guards_only() const;
  size_t elements_begin() const;  // bytes from the buffer start to the first element
  size_t elements_end() const;    // ... to one past the last
  Backend& backend_;
  TensorGeom geom_;
  size_t guard_;
  Buffer buffer_;
  Buffer expected_;  // first_damage's scratch, made at its first use
};

}  // namespace assay
