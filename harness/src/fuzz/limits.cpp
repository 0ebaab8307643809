#include "fuzz/limits.h"

namespace assay::fuzz {

CodecLimits campaign_limits(BackendKind kind, double memory_budget, double host_budget) {
  const bool host = kind == BackendKind::host;
  CodecLimits lim;
  // Any size up to 8191 (GEMM's k past 2048, say), the cost bounded instead
  // by the work and by the tensors' elements: about the old ceilings of 160
  // (host) and 1024 (GPU) per GEMM dimension, m*n*k = 160^3 and 1024^3, with
  // room for one long dimension.
  lim.max_dim = 8192;
  lim.max_work = host ? double(1 << 22) : double(1 << 30);
  lim.max_elements = host ? double(1 << 17) : double(1 << 22);
  // Huge cases where the gate runs its cases past 2^31 elements: on cuda,
  // within the memory budget (never the host). They exist to cross index and
  // grid limits, which takes elements, not work: 2^36 multiply-adds still
  // lets a 2^31-element GEMM C have k = 32, a 32x cheaper worst case than the
  // gate's 2^41 (under which an H200 campaign once ran 26 cases in 66 s).
  lim.huge = SweepTarget{kind, memory_budget, host_budget};
  lim.max_huge_work = host ? 0 : double(int64_t(1) << 36);
  return lim;
}

}  // namespace assay::fuzz
