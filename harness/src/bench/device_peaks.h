// The speed of light of the machine a bench runs on: the rates no correct
// kernel can beat (the roofline's floor, `impossible_speed`) and the rates
// per precision that achieved figures are reported against (docs/bench.md).
#pragma once
#include <string>
#include <vector>

#include "case/case.h"
#include "spec/spec.h"

namespace assay::bench {

struct DevicePeaks {
  std::string device;      // "NVIDIA H200", or "host: 2 threads"
  // The floor's rates. flops: the highest dense rate of any unit at any
  // precision (no method beats it, whatever it declares); 0: unknown, no
  // compute floor. bytes: memory bandwidth, for cold runs whose data does
  // not fit the cache; 0: no memory floor (the host's caches blur it).
  double flops_per_s = 0, bytes_per_s = 0;
  double cache_bytes = 0;           // L2 (cuda) or last-level cache (host): cold runs write twice this
  std::vector<Named<double>> rates;  // dense FLOP/s per precision, for the report
  std::string source;               // where the figures come from
};

// For the current CUDA device (cuda) or this machine's CPU (host).
DevicePeaks device_peaks(BackendKind backend);

}  // namespace assay::bench
