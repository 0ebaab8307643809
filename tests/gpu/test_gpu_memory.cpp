// On the GPU: a run's device memory is measured per process tree (NVML: the
// harness and its worker), and memory another holder has taken is waited
// for, not a verdict. The other holder is this test itself (a "hog" of
// cudaMalloc blocks), which gives the memory back while the run waits.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <thread>

#include "../samples_support.h"
#include "backend/cuda/cuda_backend.h"
#include "exec/oom_retry.h"
#include "exec/worker_runner.h"

using namespace assay;
using Catch::Matchers::Contains;

namespace {

constexpr size_t GiB = size_t(1) << 30, MiB = size_t(1) << 20;

// Takes all but about `leave` bytes of the device's free memory, as another
// process sharing the card would.
struct Hog {
  std::vector<void*> blocks;
  explicit Hog(size_t leave) {
    size_t free_bytes = 0, total = 0;
    cudaMemGetInfo(&free_bytes, &total);
    size_t want = free_bytes > leave ? free_bytes - leave : 0;
    for (size_t chunk = GiB; chunk >= 2 * MiB; chunk /= 2)
      while (want >= chunk) {
        void* p = nullptr;
        if (cudaMalloc(&p, chunk) != cudaSuccess) {
          cudaGetLastError();
          break;
        }
        blocks.push_back(p), want -= chunk;
      }
  }
  void release() {
    for (void* p : blocks) cudaFree(p);
    blocks.clear();
  }
  ~Hog() { release(); }
};

Spec cuda_sample(const char* stem) {
  for (auto& f : testing::sample_specs(BackendKind::cuda))
    if (f.stem() == stem) return load_spec(f);
  FAIL("no cuda sample " << stem);
  return {};
}

LoaderOptions loader() {
  LoaderOptions lo;
  lo.open = false;
  lo.cuda_arch = cuda_arch();
  lo.cache_dir = std::filesystem::temp_directory_path() / "assay-test-kernel-cache";
  return lo;
}

}  // namespace

TEST_CASE("a run's device memory is its own processes', measured through NVML", "[gpu][memory]") {
  CudaBackend backend;
  DeviceMemoryFigures before = backend.measure_memory();
  INFO(before.why_no_tree);
  REQUIRE(before.tree);  // the GPU machine has NVML, and it lists this process
  CHECK(before.tree->processes == 1);
  void* p = nullptr;
  REQUIRE(cudaMalloc(&p, 2 * GiB) == cudaSuccess);
  DeviceMemoryFigures held = backend.measure_memory();
  REQUIRE(held.tree);
  CHECK(held.tree->bytes >= before.tree->bytes + 2 * GiB - 64 * MiB);
  CHECK_THAT(describe(held), Contains("by NVML"));
  cudaFree(p);

  WorkerOptions wo;
  wo.library = load_kernel(cuda_sample("naive_f32"), loader()).library;
  WorkerRunner worker(backend, wo);
  REQUIRE(worker.warm_up().empty());
  DeviceMemoryFigures with_worker = backend.measure_memory();
  REQUIRE(with_worker.tree);
  CHECK(with_worker.tree->processes == 2);  // the worker is a child: it counts
  CHECK(with_worker.tree->bytes > before.tree->bytes);
}

TEST_CASE("no room for a large case is waited out until the other holder gives it back", "[gpu][memory]") {
  CudaBackend backend;
  Hog hog(2 * GiB);
  CHECK_THROWS_AS(backend.make_room(4.0 * GiB), OutOfMemory);
  MemoryWaits waits;
  OomRetry r = device_retry(backend, OomRetry::Clock::now() + std::chrono::seconds(30), 4.0 * GiB, &waits);
  auto release = r.release;
  r.release = [&] {
    release();
    hog.release();  // the other run's huge case is done
  };
  CHECK_NOTHROW(r.run([&] {
    backend.make_room(4.0 * GiB);
    return 0;
  }));
  CHECK(waits.times == 1);
}

TEST_CASE("room that never comes is an out-of-memory error with the figures", "[gpu][memory]") {
  CudaBackend backend;
  Hog hog(2 * GiB);
  OomRetry r = device_retry(backend, OomRetry::Clock::now() + std::chrono::seconds(2), 4.0 * GiB);
  try {
    r.run([&] {
      backend.make_room(4.0 * GiB);
      return 0;
    });
    FAIL("room was found");
  } catch (const OutOfMemory& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Contains("no room for a case of 4.00 GiB"));
    CHECK_THAT(m, Contains("still out of device memory after"));
    CHECK_THAT(m, Contains("the case needs 4.00 GiB"));
    CHECK_THAT(m, Contains("GiB free"));
    CHECK_THAT(m, Contains("this run's share"));
  }
}

TEST_CASE("a worker that cannot make its context on a full device is out of memory, then starts", "[gpu][memory]") {
  CudaBackend backend;
  Spec spec = cuda_sample("naive_f32");
  LoadedKernel kernel = load_kernel(spec, loader());
  const auto logs = std::filesystem::temp_directory_path() / "assay-test-gpu-memory";
  {
    Hog hog(16 * MiB);
    try {
      make_runner(spec, backend, kernel, true, logs);
      FAIL("the worker started on a full device");
    } catch (const OutOfMemory& e) {
      CHECK_THAT(std::string(e.what()), Contains("the worker cannot set up the device"));
    }
  }
  CHECK_NOTHROW(make_runner(spec, backend, kernel, true, logs));
}

TEST_CASE("the gate waits while the device is full and then gives the verdict of a free one", "[gpu][memory]") {
  auto backend = make_backend(BackendKind::cuda);
  Reporter silent;
  GateOptions opt = testing::sample_gate_options(20);
  opt.loader.cuda_arch = cuda_arch();
  Spec spec = cuda_sample("naive_f32");
  load_kernel(spec, opt.loader);  // compiled before the device fills
  Hog hog(16 * MiB);
  std::thread other([&] {  // the other run finishes its huge case after 3 s
    std::this_thread::sleep_for(std::chrono::seconds(3));
    hog.release();
  });
  KernelReport r = run_gate(spec, *backend, opt, silent);
  other.join();
  INFO(r.setup_error << (r.infrastructure.empty() ? "" : r.infrastructure.front().message));
  CHECK(r.verdict() == "pass");
  CHECK(r.cases_run == 20);
  CHECK(r.infrastructure.empty());
  CHECK(r.memory_waits >= 1);
  CHECK(r.memory_wait_seconds >= 1.5);
}
