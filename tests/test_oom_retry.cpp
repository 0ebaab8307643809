// Out of device memory on a shared GPU: the backoff that waits for memory
// (exec/oom_retry.h), the per-process accounting behind a run's share
// (core/gpu_processes.h, backend/cuda/device_share.h), and the gate that
// waits and then reports the machine's fault instead of a verdict. No GPU:
// the clock, the device and NVML's process list are fakes.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <numeric>

#include "backend/cuda/block_cache.h"
#include "backend/cuda/device_share.h"
#include "core/gpu_processes.h"
#include "exec/oom_retry.h"
#include "exec/worker_runner.h"
#include "gate/gate.h"
#include "gate/journal.h"
#include "samples_support.h"

using namespace assay;
using Catch::Matchers::Contains;

namespace {

constexpr uint64_t GiB = uint64_t(1) << 30;

// A clock that moves only when the retry sleeps.
struct FakeTime {
  OomRetry::Clock::time_point t = OomRetry::Clock::time_point{} + std::chrono::hours(1);
  std::vector<double> waits;
  int releases = 0;
  OomRetry retry(double deadline_s) {
    OomRetry r;
    r.deadline = t + std::chrono::duration_cast<OomRetry::Clock::duration>(std::chrono::duration<double>(deadline_s));
    r.jitter = 0;
    r.now = [this] { return t; };
    r.sleep = [this](double s) {
      waits.push_back(s);
      t += std::chrono::duration_cast<OomRetry::Clock::duration>(std::chrono::duration<double>(s));
    };
    r.release = [this] { ++releases; };
    r.figures = [] { return std::string("this run holds 1.00 GiB; the device has 0.50 of 80.00 GiB free"); };
    return r;
  }
};

}  // namespace

TEST_CASE("an operation out of memory twice is tried again and succeeds, its waits doubling", "[oom]") {
  FakeTime time;
  int calls = 0;
  const int got = time.retry(60).run([&] {
    if (++calls <= 2) throw OutOfMemory("cudaMalloc of 123 bytes: out of device memory");
    return 42;
  });
  CHECK(got == 42);
  CHECK(calls == 3);
  CHECK(time.waits == std::vector<double>{0.5, 1.0});
  CHECK(time.releases == 2);  // what the process caches goes back before each wait

  MemoryWaits counted;
  OomRetry r = time.retry(60);
  r.waits = &counted;
  for (int round = 0; round < 2; ++round) {
    calls = 0;
    r.run([&] {
      if (++calls <= 2) throw OutOfMemory("full");
      return 0;
    });
  }
  CHECK(counted.times == 2);  // two operations waited
  CHECK(counted.seconds == 3.0);
}

TEST_CASE("waits double up to their cap", "[oom]") {
  FakeTime time;
  int calls = 0;
  time.retry(1000).run([&] {
    if (++calls <= 8) throw OutOfMemory("full");
    return 0;
  });
  CHECK(time.waits == std::vector<double>{0.5, 1, 2, 4, 4, 4, 4, 4});
}

TEST_CASE("out of memory past the deadline goes on with the attempts and the figures", "[oom]") {
  FakeTime time;
  int calls = 0;
  try {
    time.retry(10).run([&]() -> int {
      ++calls;
      throw OutOfMemory("cudaMalloc of 123 bytes: out of device memory");
    });
    FAIL("no error after the deadline");
  } catch (const OutOfMemory& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Contains("cudaMalloc of 123 bytes: out of device memory"));
    CHECK_THAT(m, Contains("after 6 attempts over 10.0 s of waiting"));
    CHECK_THAT(m, Contains("the device has 0.50 of 80.00 GiB free"));
  }
  CHECK(calls == 6);
  CHECK(time.waits == std::vector<double>{0.5, 1, 2, 4, 2.5});  // the last wait ends at the deadline
}

TEST_CASE("other errors are not waited for", "[oom]") {
  FakeTime time;
  int calls = 0;
  CHECK_THROWS_AS(time.retry(60).run([&]() -> int {
    ++calls;
    throw InfraError("CUDA broke");
  }),
                  InfraError);
  CHECK(calls == 1);
  CHECK(time.waits.empty());
}

TEST_CASE("jitter keeps each wait near its step", "[oom]") {
  FakeTime time;
  OomRetry r = time.retry(1000);
  r.jitter = 0.25;
  int calls = 0;
  r.run([&] {
    if (++calls <= 5) throw OutOfMemory("full");
    return 0;
  });
  const double steps[] = {0.5, 1, 2, 4, 4};
  REQUIRE(time.waits.size() == 5);
  for (size_t i = 0; i < 5; ++i) {
    CHECK(time.waits[i] >= steps[i] * 0.75);
    CHECK(time.waits[i] < steps[i] * 1.25);
  }
}

TEST_CASE("a process tree's device memory is its own and its descendants'", "[oom][nvml]") {
  // 100: the harness; 101 its worker; 102 a process the worker forked; 200
  // and 300 other runs (300 a grandchild of init through 250).
  const std::map<pid_t, pid_t> parent = {{100, 50}, {101, 100}, {102, 101}, {200, 1}, {300, 250}, {250, 1}, {50, 1}};
  auto parent_of = [&](pid_t p) -> std::optional<pid_t> {
    auto it = parent.find(p);
    if (it == parent.end()) return std::nullopt;
    return it->second;
  };
  std::vector<GpuProcess> procs = {{200, 5 * GiB}, {101, 2 * GiB}, {300, 3 * GiB}, {100, GiB}, {102, GiB / 2}};
  std::optional<TreeUsage> u = tree_usage(procs, 100, parent_of);
  REQUIRE(u);
  CHECK(u->bytes == GiB * 7 / 2);
  CHECK(u->processes == 3);
  CHECK(u->others_bytes == 8 * GiB);

  SECTION("another run's process without a figure does not matter") {
    procs.push_back({400, std::nullopt});
    REQUIRE(tree_usage(procs, 100, parent_of));
    CHECK(tree_usage(procs, 100, parent_of)->bytes == GiB * 7 / 2);
  }
  SECTION("not known when a process of the tree has no figure") {
    procs[1].used = std::nullopt;
    CHECK_FALSE(tree_usage(procs, 100, parent_of));
  }
  SECTION("not known when NVML does not list the root (another PID namespace)") {
    CHECK_FALSE(tree_usage(procs, 999, parent_of));
  }
}

TEST_CASE("the parent PID is read from /proc/PID/stat", "[oom][nvml]") {
  CHECK(parse_stat_ppid("1234 (assay-worker) S 1200 1234 1200 0 -1") == pid_t(1200));
  CHECK(parse_stat_ppid("77 (a) b (c)) R 5 77 5 0") == pid_t(5));  // comm with spaces and parentheses
  CHECK_FALSE(parse_stat_ppid(""));
  CHECK_FALSE(parse_stat_ppid("12 (x"));
  CHECK_FALSE(parse_stat_ppid("12 (x) S"));
  CHECK_FALSE(parse_stat_ppid("12 (x) S abc 4"));
  CHECK(proc_parent(getpid()) == getppid());
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  CHECK(proc_parent(child) == getpid());
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  CHECK_FALSE(proc_parent(child));  // reaped: gone
}

TEST_CASE("a run's share comes from the flag, then ASSAY_DEVICE_MEMORY_GIB, then the device's total", "[oom]") {
  const size_t total = 100 * GiB;
  CHECK(resolve_device_share(total, 0, nullptr, 0.8) == 80 * GiB);
  CHECK(resolve_device_share(total, 30 * GiB, nullptr, 0.8) == 30 * GiB);
  CHECK(resolve_device_share(total, 0, "60", 0.8) == 60 * GiB);
  CHECK(resolve_device_share(total, 0, "0.5", 0.8) == GiB / 2);
  CHECK(resolve_device_share(total, 30 * GiB, "60", 0.8) == 30 * GiB);  // the flag first
  CHECK(resolve_device_share(total, 0, "500", 0.8) == total);          // never more than the device
  for (const char* bad : {"", "abc", "0", "-1", "5GiB"})
    CHECK_THROWS_AS(resolve_device_share(total, 0, bad, 0.8), InputError);
}

TEST_CASE("memory figures say what this run holds, what others hold and what is free", "[oom]") {
  DeviceMemoryFigures f;
  f.tree = TreeUsage{GiB * 7 / 2, 3, 8 * GiB};
  f.own_buffers = GiB;
  f.free = GiB, f.total = 100 * GiB, f.share = 80 * GiB;
  CHECK(f.own() == GiB * 7 / 2);
  CHECK(describe(f) == "this run holds 3.50 GiB (3 processes by NVML), other processes 8.00 GiB; the device has 1.00 "
                       "of 100.00 GiB free; this run's share 80.00 GiB");
  f.tree.reset();
  f.why_no_tree = "NVML (libnvidia-ml.so.1) is not installed";
  CHECK(f.own() == GiB);
  CHECK_THAT(describe(f), Contains("this run's buffers hold 1.00 GiB (its workers not counted: NVML "
                                   "(libnvidia-ml.so.1) is not installed)"));
}

TEST_CASE("the block cache gives back what it caches beyond its keep", "[oom][block_cache]") {
  size_t used = 0;
  int hooks = 0, frees = 0;
  std::vector<uint64_t> unmapped;
  std::vector<std::pair<std::byte*, size_t>> blocks;
  BlockCache::Device device{[&](size_t n) -> std::byte* {
                              used += n;
                              auto* p = static_cast<std::byte*>(std::malloc(n));
                              blocks.push_back({p, n});
                              return p;
                            },
                            [&](std::byte* p) {
                              for (auto& [q, n] : blocks)
                                if (q == p) used -= n;
                              ++frees, std::free(p);
                            },
                            [&](const std::vector<uint64_t>& ids) {
                              ++hooks;
                              unmapped = ids;
                            }};
  BlockCache cache(device, size_t(8) << 20);
  Block small = *cache.take(4 << 20), big = *cache.take(6 << 20);
  cache.give_back(small.data);
  CHECK(cache.cached_bytes() == size_t(4) << 20);  // within the keep: cached for the next case
  CHECK(frees == 0);
  cache.give_back(big.data);  // 10 MiB cached > 8 MiB: back to the device, after the unmap hook
  CHECK(hooks == 1);
  std::sort(unmapped.begin(), unmapped.end());
  CHECK(unmapped == std::vector<uint64_t>{small.id, big.id});
  CHECK(frees == 2);
  CHECK(cache.cached_bytes() == 0);
  CHECK(used == 0);
}

namespace {

// The host backend, but the device's memory is full for the first `full`
// room checks (or always): what the gate sees on a shared GPU.
class FullDevice final : public Backend {
 public:
  explicit FullDevice(int full) : full_(full) {}
  int room_checks = 0, releases = 0;
  BackendKind kind() const override { return host_->kind(); }
  DLDevice device() const override { return host_->device(); }
  void* stream() override { return host_->stream(); }
  size_t memory_budget() const override { return host_->memory_budget(); }
  Buffer allocate(size_t bytes) override { return host_->allocate(bytes); }
  Buffer allocate_exact(size_t bytes) override { return host_->allocate_exact(bytes); }
  void release(Buffer& b) override { host_->release(b); }
  void fill_pattern(Buffer b, uint64_t pattern, int width) override { host_->fill_pattern(b, pattern, width); }
  void fill_tensor(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed, uint32_t t) override {
    host_->fill_tensor(b, g, p, seed, t);
  }
  void fill_constant(Buffer b, const TensorGeom& g, uint64_t bits) override { host_->fill_constant(b, g, bits); }
  void copy_rotated(Buffer d, Buffer s, const TensorGeom& g, const Rotation& r) override { host_->copy_rotated(d, s, g, r); }
  void download(Buffer b, std::byte* host) override { host_->download(b, host); }
  void download_range(Buffer b, size_t o, size_t n, std::byte* h) override { host_->download_range(b, o, n, h); }
  void upload(Buffer b, const std::byte* host) override { host_->upload(b, host); }
  void copy(Buffer dst, Buffer src) override { host_->copy(dst, src); }
  std::optional<size_t> first_difference(Buffer x, Buffer y) override { return host_->first_difference(x, y); }
  void copy_elements(Buffer dst, Buffer src, const TensorGeom& g) override { host_->copy_elements(dst, src, g); }
  void read(const void* p, size_t bytes, void* h) override { host_->read(p, bytes, h); }
  CompareStats compare(const Tolerance& tol, const TensorGeom& g, const std::byte* out, const double* ref,
                       const double* bound, const double* terms, const ClassRefs& classes) override {
    return host_->compare(tol, g, out, ref, bound, terms, classes);
  }
  std::string synchronize() override { return host_->synchronize(); }
  std::optional<Buffer> owner_of(const void* p) const override { return host_->owner_of(p); }
  void make_room(double) override {
    if (full_ < 0 || room_checks++ < full_) throw OutOfMemory("no room for a case (fake)");
  }
  void release_cached() override { ++releases; }
  std::string memory_figures() override { return "this run holds 1.00 GiB (fake figures)"; }

 private:
  std::unique_ptr<Backend> host_ = make_backend(BackendKind::host);
  int full_;
};

GateOptions quick_gate(const std::filesystem::path& out, int64_t cases) {
  GateOptions opt = testing::sample_gate_options(cases);
  opt.isolation = Isolation::in_process;
  opt.out_dir = out;
  opt.corpus_dir = out / "no-corpus";
  return opt;
}

Spec naive_spec() {
  for (auto& f : testing::sample_specs(BackendKind::host))
    if (f.stem() == "naive_f32") return load_spec(f);
  FAIL("no naive_f32 host sample");
  return {};
}

}  // namespace

TEST_CASE("the gate waits for device memory and then runs the case as if nothing happened", "[oom][gate]") {
  const auto out = std::filesystem::temp_directory_path() / "assay-test-oom-wait";
  std::filesystem::remove_all(out);
  FullDevice device(2);
  Reporter silent;
  const auto t0 = std::chrono::steady_clock::now();
  KernelReport r = run_gate(naive_spec(), device, quick_gate(out, 5), silent);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.verdict() == "pass");
  CHECK(r.cases_run == 5);
  CHECK(r.infrastructure.empty());
  CHECK(device.releases == 2);
  CHECK(device.room_checks == 5 + 2);
  CHECK(r.memory_waits == 1);
  CHECK(r.memory_wait_seconds >= 0.5 * 0.75 + 1 * 0.75);
  CHECK(s >= r.memory_wait_seconds);  // it did wait
}

TEST_CASE("memory that never comes is an infrastructure error with the figures, and the case stays unfinished",
          "[oom][gate]") {
  const auto out = std::filesystem::temp_directory_path() / "assay-test-oom-never";
  std::filesystem::remove_all(out);
  FullDevice device(-1);
  Reporter silent;
  Spec spec = naive_spec();
  GateOptions opt = quick_gate(out, 5);
  opt.budget_seconds = 3;  // the memory is waited for until the budget is spent
  load_kernel(spec, opt.loader);  // compiled now: the short budget is for the cases
  std::filesystem::create_directories(out);
  Journal journal(out, nlohmann::json::object(), false);
  opt.journal = &journal;
  KernelReport r = run_gate(spec, device, opt, silent);
  CHECK(r.verdict() == "infrastructure_error");
  CHECK(r.infrastructure_failed());
  CHECK(r.cases_run == 0);
  REQUIRE(r.infrastructure.size() == 1);  // then the budget was spent: the kernel ended there
  CHECK(r.infrastructure[0].index == 0);
  CHECK_THAT(r.infrastructure[0].message, Contains("no room for a case (fake)"));
  CHECK_THAT(r.infrastructure[0].message, Contains("still out of device memory after"));
  CHECK_THAT(r.infrastructure[0].message, Contains("this run holds 1.00 GiB (fake figures)"));
  CHECK_THAT(r.infrastructure[0].message, Contains("the case needs"));
  // No result lost: --resume finds the case in flight and runs it again.
  ResumeState resume = Journal::read(out);
  CHECK(resume.finished[spec.file.string()].empty());
  CHECK(resume.in_flight[spec.file.string()].count(0) == 1);
}

namespace {

// assay-worker replaced by tests/fake_worker, in one mode, for one test.
struct FakeWorker {
  explicit FakeWorker(const char* mode) { use(mode); }
  void use(const char* mode) {
    setenv("ASSAY_WORKER", ASSAY_FAKE_WORKER, 1);
    setenv("ASSAY_FAKE_WORKER", mode, 1);
  }
  ~FakeWorker() {
    unsetenv("ASSAY_WORKER");
    unsetenv("ASSAY_FAKE_WORKER");
  }
};

const assay_call kNoTensors{ASSAY_ABI_VERSION, "gemm", 0, nullptr, 0, nullptr, 0, nullptr, nullptr, nullptr, 0};

}  // namespace

TEST_CASE("a worker that finds the device's memory full is the machine's fault, worth waiting for", "[oom][worker]") {
  auto backend = make_backend(BackendKind::host);
  const auto dir = std::filesystem::temp_directory_path() / "assay-test-oom-worker";
  Spec spec;
  spec.name = "k", spec.file = dir / "k.yaml";
  LoadedKernel kernel;
  kernel.library = dir / "k.so";  // never loaded: the fake worker runs nothing
  WorkerOptions wo;
  wo.library = kernel.library;

  SECTION("at set-up: OutOfMemory, not a kernel that cannot load") {
    FakeWorker fake("setup_oom");
    try {
      make_runner(spec, *backend, kernel, true, dir);
      FAIL("the worker started");
    } catch (const OutOfMemory& e) {
      CHECK_THAT(std::string(e.what()), Contains("the worker cannot set up the device"));
      CHECK_THAT(std::string(e.what()), Contains("cudaErrorMemoryAllocation"));
    }
  }
  SECTION("another set-up failure of the device is infrastructure, not out of memory") {
    FakeWorker fake("setup_unavailable");
    bool infra = false, oom = false;
    try {
      make_runner(spec, *backend, kernel, true, dir);
    } catch (const OutOfMemory&) {
      oom = true;
    } catch (const InfraError&) {
      infra = true;
    }
    CHECK(infra);
    CHECK_FALSE(oom);
  }
  SECTION("a fresh worker mid-run that cannot set up throws instead of giving a crash verdict") {
    FakeWorker fake("setup_oom");
    WorkerRunner runner(*backend, wo);
    CHECK_THROWS_AS(runner.run(kNoTensors, 5), OutOfMemory);
  }
  SECTION("buffers the backend frees are forgotten by the worker, which stays") {
    FakeWorker fake("");
    WorkerRunner runner(*backend, wo);
    REQUIRE(runner.warm_up().empty());
    std::vector<uint64_t> ids(100);  // more than one request holds
    std::iota(ids.begin(), ids.end(), 1);
    runner.forget(ids);
    CHECK(runner.run(kNoTensors, 5).end == RunEnd::returned);
    CHECK(runner.workers_started() == 1);  // what the candidate keeps in its process is kept
  }
  SECTION("a call that met full memory throws; the next call gets a fresh worker") {
    FakeWorker fake("call_oom");
    WorkerRunner runner(*backend, wo);
    REQUIRE(runner.warm_up().empty());
    try {
      runner.run(kNoTensors, 5);
      FAIL("the call counted");
    } catch (const OutOfMemory& e) {
      CHECK_THAT(std::string(e.what()), Contains("the device's memory was full during the call"));
    }
    fake.use("");
    RunStatus s = runner.run(kNoTensors, 5);
    CHECK(s.end == RunEnd::returned);
    CHECK(runner.workers_started() == 2);
  }
}
