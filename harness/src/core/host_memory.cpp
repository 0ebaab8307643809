#include "core/host_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

namespace assay {

double default_host_memory_limit() {
  const double ram = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  const double cap = double(size_t(16) << 30);
  return ram > 0 ? std::min(cap, ram / 4) : cap;
}

double resident_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long size = 0, resident = 0;
  const int got = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  return got == 2 ? double(resident) * double(sysconf(_SC_PAGESIZE)) : 0;
}

double peak_resident_bytes() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return double(u.ru_maxrss) * 1024;  // Linux: kilobytes
}

std::string gib(double bytes) { return fmt::format("{:.3g} GiB", bytes / double(size_t(1) << 30)); }

bool HostMemoryCap::fits(double bytes) const {
  if (bytes > for_cases()) return false;
  if (bytes < double(64 << 20)) return true;  // reading /proc per tiny case is not worth it
  return bytes <= limit - std::max(baseline, resident_bytes());
}

}  // namespace assay
