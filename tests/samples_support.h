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

inline std::vector<std::filesystem::path> sample_specs(BackendKind kind, const char* family = "gemm") {
  std::vector<std::filesystem::path> out;
  // ASSAY_SOURCE_DIR in the environment points at a copy of the tree (the GPU machine).
  const char* env = std::getenv("ASSAY_SOURCE_DIR");
  auto root = std::filesystem::path(env ? env : ASSAY_SOURCE_DIR);
  auto dir = root / "generated_kernels" / family / std::string(name(kind));
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
