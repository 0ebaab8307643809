// Runs the bundled sample kernels of one backend through the gate, for the
// tests that assert each gets the verdict its spec expects.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "backend/backend.h"
#include "gate/gate.h"
#include "report/reporter.h"
#include "spec/spec.h"

namespace assay::testing {

// The source tree the tests read samples and kernels from: ASSAY_SOURCE_DIR
// in the environment (a copy of the tree on another machine, the GPU's),
// else the tree the tests were built from.
inline std::filesystem::path source_root() {
  const char* env = std::getenv("ASSAY_SOURCE_DIR");
  return std::filesystem::path(env && *env ? env : ASSAY_SOURCE_DIR);
}

inline std::vector<std::filesystem::path> sample_specs(BackendKind kind, const char* family = "gemm") {
  std::vector<std::filesystem::path> out;
  auto dir = source_root() / "generated_kernels" / family / std::string(name(kind));
  for (auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

inline GateOptions sample_gate_options(int64_t cases) {
  GateOptions opt;
  opt.max_cases = cases;
  opt.budget_seconds = 120;
  opt.max_failures = 1;
  opt.out_dir = std::filesystem::temp_directory_path() / "assay-test-cases";
  opt.loader.cache_dir = std::filesystem::temp_directory_path() / "assay-test-kernel-cache";
  return opt;
}

}  // namespace assay::testing
