// A campaign's case limits on one backend (fuzz/campaign.cpp; the fuzz lab's too).
#pragma once
#include "ops/op.h"

namespace assay::fuzz {

// Ordinary cases: any size below 8192, Op::work at most 2^22 on the host and
// 2^30 on a GPU, elements at most 2^17 and 2^22. Huge cases on cuda only,
// within `memory_budget` bytes of device memory (Op::case_bytes),
// `host_budget` bytes of the harness's host memory (Op::host_bytes) and 2^36
// of work.
CodecLimits campaign_limits(BackendKind kind, double memory_budget, double host_budget = 1e300);

}  // namespace assay::fuzz
