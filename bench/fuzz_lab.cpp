// A laboratory for the fuzzer's search, without kernels: libFuzzer drives the
// campaign's codec, mutator and feedback (harness/src/fuzz) over a
// modelled kernel that is wrong only in a window, m % BLOCK above BLOCK / 2 and
// k > STAGE (generated_kernels/needle/*/window_bug), and the run stops at the
// first case in the window. It counts executions, not seconds: whether the
// feedback or a move reaches the window in fewer cases, thousands of times
// faster than real campaigns, and exactly reproducible per seed. The GPU
// measurement (scripts/bench-fuzz-feedback.sh) stays the one that counts.
//
//   assay_fuzz_lab BLOCK STAGE with|without SEED [MAX_RUNS]
//
// Limits are an H200 campaign's (campaign.cpp; huge cases as when planning
// for 8 GiB), or the host's with ASSAY_FUZZ_LAB_LIMITS=host. Prints "found
// after N cases: m= n= k=" or "not found in N cases", exit 0 either way. A
// pass's error is modelled as a correct f32 sum's: exact on integers, else
// growing as sqrt(k) in ulps. Time per case is not modelled: on a GPU it
// depends on the kernel (the feedback campaign paid twice the blind one's).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "bench_cli.h"
#include "case/rng.h"
#include "fuzz/corpus.h"
#include "fuzz/feedback.h"
#include "fuzz/limits.h"
#include "ops/op.h"

extern "C" int LLVMFuzzerRunDriver(int* argc, char*** argv, int (*cb)(const uint8_t*, size_t));
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {
using namespace assay;
namespace fs = std::filesystem;

// The modelled kernel is a GEMM's (the needle kernels are): the default
// spec's op, its sizes m and k.
struct Lab {
  Spec spec;
  const Op* op = nullptr;  // op_of(spec)
  CodecLimits limits;
  int64_t block = 64, stage = 2048, cases = 0;
  fs::path corpus;  // removed at the end either way
} lab;

int run_one(const uint8_t* data, size_t size) {
  const Case c = lab.op->decode(data, size, lab.spec, lab.limits);
  ++lab.cases;
  CaseOutcome o;
  const int64_t m = c.size("m"), k = c.size("k");
  if (m % lab.block > lab.block / 2 && k > lab.stage) {
    std::string sizes;
    for (const auto& s : c.sizes) sizes += " " + s.name + "=" + std::to_string(s.value);
    std::printf("found after %lld cases:%s\n", (long long)lab.cases, sizes.c_str());
    std::fflush(stdout);
    fs::remove_all(lab.corpus);
    std::_Exit(0);
  }
  if (c.recipe != Recipe::ints) {
    o.stats.max_ulps = std::sqrt(double(k) + 1);
    o.stats.max_ratio = o.stats.max_ulps / (2.0 * double(k + 4));
  }
  fuzz::record_features(*lab.op, c, o);
  return 0;
}

}  // namespace

// The campaign's mutator (campaign.cpp), over the lab's limits.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  if (!lab.op || seed % 4 == 0) return LLVMFuzzerMutate(data, size, max_size);
  const Op& op = *lab.op;
  auto bytes = op.encode(op.mutate(op.decode(data, size, lab.spec, lab.limits), mix64(seed), lab.limits), lab.limits);
  size_t n = std::min(bytes.size(), max_size);
  std::memcpy(data, bytes.data(), n);
  return n;
}

int run_lab(int argc, char** argv) {
  using assay::bench_cli::read_whole;
  long long block = 0, stage = 0, seed = 0, runs = 1000000;
  const std::string mode = argc > 3 ? argv[3] : "";
  if (argc < 5 || argc > 6 || !read_whole(argv[1], block) || block < 2 || !read_whole(argv[2], stage) || stage < 0 ||
      (mode != "with" && mode != "without") || !read_whole(argv[4], seed) || seed < 0 ||
      (argc == 6 && (!read_whole(argv[5], runs) || runs < 1))) {
    std::fprintf(stderr,
                 "usage: %s BLOCK STAGE with|without SEED [MAX_RUNS]\n"
                 "  BLOCK >= 2, STAGE >= 0, SEED >= 0, MAX_RUNS >= 1: whole numbers\n",
                 argv[0]);
    return 2;
  }
  lab.block = block, lab.stage = stage;
  lab.op = &op_of(lab.spec);
  const bool features = mode == "with";
  // ASSAY_FUZZ_LAB_LIMITS=host: the host's ordinary limits instead of cuda's.
  const char* which = std::getenv("ASSAY_FUZZ_LAB_LIMITS");
  const bool host = which && std::string(which) == "host";
  // A GPU campaign's limits as when planning for 8 GiB (scripts/bench-fuzz-feedback.sh's runs).
  lab.limits = fuzz::campaign_limits(host ? BackendKind::host : BackendKind::cuda, 8.0 * (1 << 30));
  fuzz::enable_features(features, lab.limits);
  lab.corpus = fs::temp_directory_path() / ("assay-fuzz-lab-" + std::to_string(::getpid()));
  fs::create_directories(lab.corpus);
  fuzz::seed_fuzz_corpus(lab.corpus, *lab.op, lab.spec, lab.limits);  // as a campaign starts
  std::vector<std::string> args = {"assay-fuzz-lab", "-seed=" + std::to_string(seed), "-runs=" + std::to_string(runs), "-max_len=64",
                                    "-keep_seed=1", "-print_final_stats=0", "-reload=0", lab.corpus.string()};
  std::vector<char*> av;
  for (auto& a : args) av.push_back(a.data());
  av.push_back(nullptr);
  int ac = int(args.size());
  char** avp = av.data();
  std::atexit([] {  // libFuzzer exits when its runs are done
    std::printf("not found in %lld cases\n", (long long)lab.cases);
    fs::remove_all(lab.corpus);
  });
  return LLVMFuzzerRunDriver(&ac, &avp, run_one);
}

int main(int argc, char** argv) {
  return assay::bench_cli::guarded(argv[0], [&] { return run_lab(argc, argv); });
}
