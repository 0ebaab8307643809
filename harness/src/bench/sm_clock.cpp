#include "bench/sm_clock.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

namespace assay::bench {
namespace {

// NVML's own values (nvml.h), so that no header of the driver is needed to build.
constexpr int kClockSm = 1;
constexpr uint64_t kSwPowerCap = 0x4, kHwSlowdown = 0x8, kSwThermal = 0x20, kHwThermal = 0x40, kHwPowerBrake = 0x80;

class NvmlClock final : public SmClock {
 public:
  using InitFn = int (*)();
  using ByBusFn = int (*)(const char*, void**);
  using ClockFn = int (*)(void*, int, unsigned*);
  using ReasonsFn = int (*)(void*, unsigned long long*);
  NvmlClock(void* lib, void* dev, ClockFn clock, ClockFn max_clock, ReasonsFn reasons)
      : lib_(lib), dev_(dev), clock_(clock), max_clock_(max_clock), reasons_(reasons) {}
  ~NvmlClock() override {
    if (auto shutdown = reinterpret_cast<InitFn>(dlsym(lib_, "nvmlShutdown"))) shutdown();
    dlclose(lib_);
  }
  std::optional<ClockReading> read() override {
    unsigned mhz = 0, max_mhz = 0;
    unsigned long long reasons = 0;
    if (clock_(dev_, kClockSm, &mhz) != 0 || max_clock_(dev_, kClockSm, &max_mhz) != 0) return std::nullopt;
    if (reasons_ && reasons_(dev_, &reasons) != 0) reasons = 0;
    return classify(mhz, max_mhz, reasons);
  }

 private:
  void* lib_;
  void* dev_;
  ClockFn clock_, max_clock_;
  ReasonsFn reasons_;
};

}  // namespace

ClockReading classify(unsigned sm_mhz, unsigned max_sm_mhz, uint64_t reasons) {
  ClockReading r{sm_mhz, max_sm_mhz, reasons, false, {}};
  const std::pair<uint64_t, const char*> named[] = {{kSwPowerCap, "power cap"}, {kHwSlowdown, "hardware slowdown"},
                                                    {kSwThermal, "thermal (software)"}, {kHwThermal, "thermal (hardware)"},
                                                    {kHwPowerBrake, "power brake"}};
  for (auto [bit, what] : named)
    if (reasons & bit) r.throttled = true, r.why += (r.why.empty() ? "" : ", ") + std::string(what);
  return r;
}

std::unique_ptr<SmClock> SmClock::open(std::string& why) {
  char bus[32] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetPCIBusId(bus, sizeof bus, dev) != cudaSuccess) {
    cudaGetLastError();
    why = "no CUDA device";
    return nullptr;
  }
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    why = "NVML (libnvidia-ml.so.1) is not installed";
    return nullptr;
  }
  auto init = reinterpret_cast<NvmlClock::InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto by_bus = reinterpret_cast<NvmlClock::ByBusFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto clock = reinterpret_cast<NvmlClock::ClockFn>(dlsym(lib, "nvmlDeviceGetClockInfo"));
  auto max_clock = reinterpret_cast<NvmlClock::ClockFn>(dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
  auto reasons = reinterpret_cast<NvmlClock::ReasonsFn>(dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons"));
  if (!reasons) reasons = reinterpret_cast<NvmlClock::ReasonsFn>(dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons"));
  void* handle = nullptr;
  if (!init || !by_bus || !clock || !max_clock || init() != 0 || by_bus(bus, &handle) != 0) {
    why = "NVML cannot open the device";
    dlclose(lib);
    return nullptr;
  }
  return std::make_unique<NvmlClock>(lib, handle, clock, max_clock, reasons);
}

}  // namespace assay::bench
