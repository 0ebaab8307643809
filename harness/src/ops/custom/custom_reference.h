// The user's reference of a custom op: its source compiled with the host
// compiler as the loader compiles host candidates (cached the same way), once
// per `assay_real` type (ASSAY_REFERENCE_DTYPE, assay/reference.h), and
// called in this process (it is the user's trusted code, not a candidate) on
// compact row-major FP64 host tensors.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "exec/loader.h"
#include "ops/custom/custom_def.h"

namespace assay::custom {

// ASSAY_REFERENCE_DTYPE for a dtype: f64 0, f32 1, f16 2, bf16 3.
int reference_mode(DType t);

class References {
 public:
  // Compiles the FP64 build and, for vs_same_precision, the build of each
  // output's dtype. Throws InputError with the compiler's output when one
  // does not compile.
  References(const Spec& spec, const Def& def);

  // Runs build `mode` on the case's tensors: data[i] holds tensor i's
  // elements compact row-major (inputs and inout tensors' initial values
  // filled, outputs zeroed); the outputs come back there. Throws InfraError
  // naming the reference when it returns nonzero.
  void run(int mode, const Case& c, std::span<std::vector<double>> data) const;

 private:
  assay_run_fn build(int mode) const;  // compiled and loaded on first use
  Spec spec_;
  std::filesystem::path source_;
  mutable std::mutex mu_;
  mutable std::map<int, LoadedKernel> builds_;
};

}  // namespace assay::custom
