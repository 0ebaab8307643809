// A run's share of a GPU that other runs may share too (docs/cases.md,
// "Device memory"). The share decides which cases a run draws, so it must
// not depend on what the other processes hold at the moment: it comes from
// the flag, ASSAY_DEVICE_MEMORY_GIB or a fraction of the device's total, and
// the run's own usage (itself and its workers, per process through NVML) is
// measured against it. Plain host code: tested without a GPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/gpu_processes.h"

namespace assay {

// The share in bytes: `requested` when not 0, else the GiB of `env`
// (ASSAY_DEVICE_MEMORY_GIB; nullptr: unset), else `fraction` of `total`;
// never more than total. Throws InputError for an env value that is not a
// positive number.
size_t resolve_device_share(size_t total, size_t requested, const char* env, double fraction);

// What an out-of-memory report says about the device.
struct DeviceMemoryFigures {
  std::optional<TreeUsage> tree;  // per process (NVML); nullopt: not available
  uint64_t own_buffers = 0;       // what this process knows it holds (buffers, pooled scratch)
  uint64_t free = 0, total = 0;   // the whole device (cudaMemGetInfo)
  uint64_t share = 0;
  std::string why_no_tree;        // when tree is nullopt
  // This run's usage: per process when known, else its own buffers.
  uint64_t own() const { return tree ? tree->bytes : own_buffers; }
};
// "this run holds 12.3 GiB (2 processes, NVML), other processes 80.1 GiB;
// device 3.2 of 139.8 GiB free; share 111.8 GiB"
std::string describe(const DeviceMemoryFigures& f);

}  // namespace assay
