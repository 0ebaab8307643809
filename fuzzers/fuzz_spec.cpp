// libFuzzer target: assay::parse_spec on arbitrary text (issue #3).
// Bad input may only throw assay::InputError; any other exception, a crash,
// a sanitizer report, a leak, a hang or running out of memory is a finding.
//
// The spec is parsed as if it were a file in $ASSAY_FUZZ_SPEC_DIR (default:
// the current folder), so `source:` entries naming files there resolve.
// scripts/fuzz-parsers.sh points it at generated_kernels/gemm/host, the
// folder of the seed specs.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "spec/spec.h"

namespace {
std::filesystem::path g_spec_file = "fuzz_spec.yaml";
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("ASSAY_FUZZ_SPEC_DIR"); dir && *dir)
    g_spec_file = std::filesystem::path(dir) / "fuzz_spec.yaml";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    assay::Spec s = assay::parse_spec(text, g_spec_file);
    // A spec that loads has a known backend and at most the allowed libs.
    if (assay::name(s.backend) == "?") {
      std::fprintf(stderr, "fuzz_spec: parsed spec has an unnamed backend\n");
      std::abort();
    }
    for (const auto& lib : s.libs)
      if (lib != "cublas") {
        std::fprintf(stderr, "fuzz_spec: parsed spec has library '%s'\n", lib.c_str());
        std::abort();
      }
  } catch (const assay::InputError&) {
    // the expected outcome for bad input
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_spec: unexpected exception escaped parse_spec: %s\n", e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz_spec: unexpected non-std exception escaped parse_spec\n");
    std::abort();
  }
  return 0;
}
