// Turns a spec's source into a loaded assay_run: compiles it (nvcc for cuda,
// the host C++ compiler for host) into a shared object cached by a hash of
// source, flags and toolkit version, then dlopens it.
#pragma once
#include <filesystem>
#include <string>

#include "assay/abi.h"
#include "spec/spec.h"

namespace assay {

struct LoadedKernel {
  void* handle = nullptr;
  assay_run_fn run = nullptr;
  std::filesystem::path library;
  bool from_cache = false;
};

struct LoaderOptions {
  std::string cuda_arch = "sm_90";    // for the GPU present
  std::filesystem::path cache_dir;    // empty: $ASSAY_CACHE_DIR, else ~/.cache/assay
  bool open = true;  // dlopen here; false when a worker process will load it instead
};

// Throws InputError with the compiler's output verbatim when compilation
// fails, or (when opened here) when the entry symbol is missing.
LoadedKernel load_kernel(const Spec& spec, const LoaderOptions& opt);

// Folder holding assay/abi.h and dlpack/dlpack.h for candidates.
std::filesystem::path kernel_include_dir();

}  // namespace assay
