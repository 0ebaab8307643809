// The SM clock and why it is low, from NVML (loaded at run time, as
// core/gpu_processes.h does): samples a GPU took while it throttled (power
// cap, thermal or hardware slowdown) are not the kernel's speed, and the
// bench drops them (docs/bench.md).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace assay::bench {

struct ClockReading {
  unsigned sm_mhz = 0, max_sm_mhz = 0;
  uint64_t reasons = 0;   // nvmlClocksEventReasons bits
  bool throttled = false;  // a power cap, a thermal or a hardware slowdown
  std::string why;         // the reasons, for the report
};

class SmClock {
 public:
  // For the current CUDA device; nullptr and `why` where NVML is missing.
  static std::unique_ptr<SmClock> open(std::string& why);
  virtual ~SmClock() = default;
  virtual std::optional<ClockReading> read() = 0;
};

// The reasons' bits that mean the clock was held down, not idle or set by the user.
ClockReading classify(unsigned sm_mhz, unsigned max_sm_mhz, uint64_t reasons);

}  // namespace assay::bench
