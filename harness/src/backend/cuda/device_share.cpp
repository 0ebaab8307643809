#include "backend/cuda/device_share.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "core/error.h"

namespace assay {

size_t resolve_device_share(size_t total, size_t requested, const char* env, double fraction) {
  size_t share = size_t(double(total) * fraction);
  if (requested > 0) {
    share = requested;
  } else if (env) {
    char* end = nullptr;
    const double gib = std::strtod(env, &end);
    if (end == env || *end != '\0' || !(gib > 0) || gib > 1e6)
      throw InputError(fmt::format("ASSAY_DEVICE_MEMORY_GIB='{}': expected a positive number of GiB", env));
    share = size_t(gib * double(size_t(1) << 30));
  }
  return std::min(share, total);
}

std::string describe(const DeviceMemoryFigures& f) {
  auto gib = [](uint64_t b) { return double(b) / double(uint64_t(1) << 30); };
  std::string own = f.tree ? fmt::format("this run holds {:.2f} GiB ({} process{} by NVML), other processes {:.2f} GiB",
                                         gib(f.tree->bytes), f.tree->processes, f.tree->processes == 1 ? "" : "es",
                                         gib(f.tree->others_bytes))
                           : fmt::format("this run's buffers hold {:.2f} GiB (its workers not counted: {})",
                                         gib(f.own_buffers), f.why_no_tree);
  return fmt::format("{}; the device has {:.2f} of {:.2f} GiB free; this run's share {:.2f} GiB", own, gib(f.free),
                     gib(f.total), gib(f.share));
}

}  // namespace assay
