// The FP64 reference of a moe_topk case and the judging of a kernel's
// outputs, token by token on the host (a token's routing is a few hundred
// scores: on cuda the inputs' spans are downloaded once a call).
#pragma once
#include <span>
#include <vector>

#include "backend/backend.h"
#include "judge/compare.h"
#include "ops/moe_topk/moe_topk_problem.h"
#include "ops/op.h"

namespace assay::moe_topk {

// The reference's own routing, per output tensor (empty for inputs): the
// weights and the indices of its choice (ties to the lower index); an
// undefined token gets NaN weights and index -1.
std::vector<std::vector<double>> reference(Backend& backend, const Settings& s, const Case& c,
                                           std::span<const std::byte* const> device);

// The kernel's indices judged by the tie-aware matcher, its weights against
// the reference weights of the choice it made (or, where that choice is
// wrong, of the reference's), under the bound of docs/tolerance.md.
CompareStats judge(Backend& backend, const Settings& s, const JudgeInput& in);

}  // namespace assay::moe_topk
