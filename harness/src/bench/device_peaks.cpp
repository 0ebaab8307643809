#include "bench/device_peaks.h"

#include <cuda_runtime.h>
#include <unistd.h>

#include <thread>

#include <fmt/format.h>

namespace assay::bench {
namespace {

// NVIDIA's datasheets give the tensor rates with 2:4 sparsity; dense is
// half. Sparse rates need structured-sparse operands, which the bench's
// drawn inputs never are, so the floor uses the dense FP8/INT8 rate.
struct KnownGpu {
  const char* match;
  double fp64, fp64_tensor, fp32, tf32, bf16, fp8, hbm;
  const char* source;
};
constexpr KnownGpu kKnown[] = {
    {"H200", 34e12, 67e12, 67e12, 494.7e12, 989.4e12, 1978.9e12, 4.8e12,
     "NVIDIA H200 Tensor Core GPU datasheet (SXM): dense = half the listed sparse tensor rates"},
    {"H100", 34e12, 67e12, 67e12, 494.7e12, 989.4e12, 1978.9e12, 3.35e12,
     "NVIDIA H100 Tensor Core GPU datasheet (SXM): dense = half the listed sparse tensor rates"},
};

DevicePeaks cuda_peaks() {
  DevicePeaks p;
  int dev = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
    cudaGetLastError();
    p.device = "unknown CUDA device", p.source = "the device could not be asked";
    return p;
  }
  p.device = prop.name;
  p.cache_bytes = double(prop.l2CacheSize);
  for (const KnownGpu& g : kKnown)
    if (p.device.find(g.match) != std::string::npos) {
      p.flops_per_s = g.fp8, p.bytes_per_s = g.hbm, p.source = g.source;
      p.rates = {{"f64", g.fp64}, {"f64_tensor", g.fp64_tensor}, {"f32", g.fp32}, {"tf32", g.tf32},
                 {"bf16", g.bf16}, {"f16", g.bf16}, {"fp8", g.fp8}};
      return p;
    }
  // Unknown: the memory bandwidth from the device's own figures, no compute floor.
  int khz = 0, bus_bits = 0;
  cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev);
  p.bytes_per_s = 2.0 * double(khz) * 1e3 * double(bus_bits) / 8;  // double data rate
  p.source = "memory clock and bus width from the device; its compute peaks are not known to assay (no compute floor)";
  return p;
}

DevicePeaks host_peaks() {
  DevicePeaks p;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  p.device = fmt::format("host: {} hardware threads", threads);
  // An upper bound no x86 core of today exceeds in f32 without a matrix
  // engine: two 16-lane FMA units (64 FLOP a cycle) at 5 GHz, every thread.
  p.flops_per_s = double(threads) * 64 * 5e9;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  p.cache_bytes = double(l3 > 0 ? l3 : l2 > 0 ? l2 : 32L << 20);
  p.rates = {{"f32", p.flops_per_s}};
  p.source = "bound: hardware threads x 64 FLOP/cycle (two 16-lane FMA units) x 5 GHz; no memory floor on the host";
  return p;
}

}  // namespace

DevicePeaks device_peaks(BackendKind backend) { return backend == BackendKind::cuda ? cuda_peaks() : host_peaks(); }

}  // namespace assay::bench
