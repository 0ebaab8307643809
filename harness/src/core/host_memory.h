// Host memory of the harness's own process: the cap a run keeps its cases
// within (--host-memory-limit), and the process's resident set as Linux counts it.
#pragma once
#include <cstddef>
#include <string>

namespace assay {

// The default cap: the smaller of 16 GiB and a quarter of the machine's RAM.
double default_host_memory_limit();
// This process's resident set now, and its peak so far (bytes; 0 if unknown).
double resident_bytes();
double peak_resident_bytes();
// "1.5 GiB"
std::string gib(double bytes);

// The host memory a run may give its cases: the cap less what the process
// held when the run started (libraries, the CUDA context, the kernel).
struct HostMemoryCap {
  double limit = 0;     // bytes; the process stays below this
  double baseline = 0;  // resident bytes when the run set up
  double for_cases() const { return limit > baseline ? limit - baseline : 0; }
  // Whether a case needing `bytes` fits now: small ones by the baseline, large
  // ones against the resident set of this moment (freed memory the allocator
  // kept counts against them).
  bool fits(double bytes) const;
  static HostMemoryCap measure(double limit) { return {limit, resident_bytes()}; }
};

}  // namespace assay
