// One token's routing in FP64 (docs/ops/moe_topk.md) with the bound a
// correct f32 kernel keeps to (docs/tolerance.md, "MoE top-k routing"), and
// the tie-aware matcher: which choices of experts a correct kernel could
// make, and the weights of the choice it made.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ops/moe_topk/moe_topk_problem.h"

namespace assay::moe_topk {

// A bound's constants: u the unit roundoff of the scores' arithmetic (f32),
// scale the safety factor T.
struct Precision {
  double u = 0x1p-24;
  double scale = 2.0;
};

struct TokenRouting {
  bool undefined = false;       // NaN logits (softmax: +inf, or all -inf): only written slots are asked for
  std::vector<double> score;    // p_e or s_e
  std::vector<double> rel;      // score's relative error bound, in units of u (T not applied)
  std::vector<double> sel;      // selection score: score + bias
  std::vector<double> delta;    // |computed sel - sel| of a correct kernel, T applied
  std::vector<double> group, group_delta;  // group scores and their bounds (grouped routing)
  std::vector<int64_t> chosen;  // the reference's choice in slot order (ties: lowest index)
};

// x: the token's logits, decoded; bias: per expert, or empty.
TokenRouting route(const Settings& s, int64_t topk, std::span<const double> x, std::span<const double> bias,
                   const Precision& prec);
// The same into `out`, reusing its arrays (a judge routes every token of a case).
void route(const Settings& s, int64_t topk, std::span<const double> x, std::span<const double> bias,
           const Precision& prec, TokenRouting& out);

// Whether `got` (the kernel's indices, slot order) is a choice a correct
// kernel could make; nullopt when it is, else why not.
std::optional<std::string> judge_choice(const Settings& s, const TokenRouting& r, std::span<const int64_t> got);

// The weights of choice S (slot order) and each one's bound magnitude (in
// units of u: Tolerance{u_eff = u} applies T).
void weights_of(const Settings& s, const TokenRouting& r, std::span<const int64_t> chosen, double* ref,
                double* bound);

}  // namespace assay::moe_topk
