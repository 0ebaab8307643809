// GPU tests: skipped (exit 77, which CTest reports as skipped) with a clear
// message where no CUDA GPU is present.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "backend/backend.h"

int main(int argc, char** argv) {
  std::string why;
  if (!assay::cuda_available(&why)) {
    std::printf("SKIPPED: GPU tests need a CUDA GPU (%s)\n", why.c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
