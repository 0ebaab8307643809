// moe_topk as an op on the generic core (ABI v1, docs/ops/moe_topk.md):
// each token's logits [tokens, experts] (and a bias) route it to topk
// experts, weights f32 and indices i32 [tokens, topk]; Mixtral's
// softmax_topk and DeepSeek-V3's sigmoid_bias_grouped. The spec's
// `routing:`, `sorted` and `math` keys are its settings.
#include <fmt/format.h>

#include "core/error.h"
#include "ops/moe_topk/moe_topk_baselines.h"
#include "ops/moe_topk/moe_topk_fuzz.h"
#include "ops/moe_topk/moe_topk_judge.h"
#include "ops/moe_topk/moe_topk_problem.h"
#include "ops/moe_topk/moe_topk_sweep.h"
#include "ops/op.h"

namespace assay::moe_topk {
namespace {

class MoeTopkOp final : public Op {
 public:
  explicit MoeTopkOp(const Spec& spec) {
    check_spec_keys(spec, {"routing", "sorted", "math"}, {});  // dtypes: read_settings (bias is optional)
    s_ = read_settings(spec);
  }
  std::string_view name() const override { return "moe_topk"; }

  void validate(const Case& c) const override { validate_case(c, s_); }
  std::unique_ptr<EvalContext> context(const Case& c) const override { return std::make_unique<Context>(c); }
  std::unique_ptr<EvalContext> names_context() const override { return std::make_unique<Names>(); }

  std::vector<Case> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target) const override {
    return moe_topk::sweep(spec, s_, seed, target);
  }
  std::optional<Case> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim) const override {
    return moe_topk::random_case(spec, s_, seed, index, lim);
  }
  std::optional<Case> fit_requires(const Case& c, const Spec& spec) const override {
    return moe_topk::fit_requires(c, spec, s_);
  }
  bool huge_case_fits(const Case& c, const SweepTarget& target) const override {
    return moe_topk::huge_case_fits(c, target);
  }

  double work(const Case& c) const override { return moe_topk::work(c); }
  double case_bytes(const Case& c) const override { return moe_topk::case_bytes(c); }
  double host_bytes(const Case& c, BackendKind backend) const override { return moe_topk::host_bytes(c, backend); }
  double default_timeout(const Case& c, BackendKind backend) const override {
    return moe_topk::default_timeout(c, backend);
  }

  RecipeParams recipe_params(const Case& c, int tensor) const override { return moe_topk::recipe_params(c, tensor); }
  // Call 3's edit goes into the logits: a changed bias may leave every
  // choice and weight as they were, which says nothing of a cache.
  SparseChange sparse_change(const Case& c) const override {
    return draw_sparse_change(c, c.geom(positions(c).logits).count() > 0 ? std::vector<int>{positions(c).logits}
                                                                         : std::vector<int>{});
  }

  std::vector<std::vector<double>> reference(Backend& backend, const Case& c,
                                             std::span<const std::byte* const> device) const override {
    return moe_topk::reference(backend, s_, c, device);
  }
  CompareStats judge(Backend& backend, const JudgeInput& in) const override { return moe_topk::judge(backend, s_, in); }

  Case resize(const Case& c, std::span<const int64_t> sizes, bool keep_layout) const override {
    Parts p = parts_of(c);
    Sizes z{sizes[0], std::max<int64_t>(1, sizes[1]), std::max<int64_t>(1, sizes[2])};
    if (s_.grouped()) z.experts = std::max<int64_t>(s_.n_group, z.experts / s_.n_group * s_.n_group);
    z.topk = std::min(z.topk, s_.grouped() ? int64_t(s_.topk_group) * (z.experts / s_.n_group) : z.experts);
    p.sizes = z;
    if (!keep_layout) {
      p.logits = rows::plain_like(p.logits), p.weights = rows::plain_like(p.weights);
      p.indices = rows::plain_like(p.indices), p.bias_layout = rows::Layout{};
    }
    return make_case(p);
  }
  std::vector<Case> simplifications(const Case& c) const override {
    const Parts p = parts_of(c);
    std::vector<Case> out;
    Parts plain = p;
    plain.logits = plain.weights = plain.indices = plain.bias_layout = rows::Layout{};
    out.push_back(make_case(plain));
    for (int which = 0; which < 4; ++which) {
      Parts q = p;
      (which == 0 ? q.logits : which == 1 ? q.weights : which == 2 ? q.indices : q.bias_layout) = rows::Layout{};
      if (which < 3 || p.bias) out.push_back(make_case(q));
    }
    return out;
  }
  Case with_layout(const Case& c, int tensor, bool col_major, int64_t pad, int64_t offset) const override {
    Parts p = parts_of(c);
    const Positions at = positions(c);
    const rows::Layout l{col_major, pad, offset, 0, false};
    if (tensor == at.logits) p.logits = l;
    if (tensor == at.bias) p.bias_layout = rows::Layout{false, pad, offset, 0, false};
    if (tensor == at.weights) p.weights = l;
    if (tensor == at.indices) p.indices = l;
    return make_case(p);
  }

  Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim) const override {
    return moe_topk::decode(data, size, spec, s_, lim);
  }
  std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim) const override {
    return moe_topk::encode(c, lim);
  }
  Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) const override {
    return moe_topk::mutate(c, s_, random, lim);
  }
  std::vector<Case> seed_cases(const Spec& spec) const override { return moe_topk::seed_cases(spec, s_); }
  bool is_huge(const Case& c, const CodecLimits& lim) const override { return moe_topk::is_huge(c, lim); }

  // A decode step's routing (Mixtral's 8 experts, topk 2; DeepSeek-V3's
  // 256, topk 8) at a batch of 4096 tokens, and a prefill of 65,536.
  std::vector<BenchShape> bench_shapes() const override {
    const bool mixtral = s_.mode == Mode::softmax_topk;
    std::vector<BenchShape> out;
    for (int64_t tokens : {4096, 65536}) {
      Sizes z{tokens, mixtral ? 8 : 256, mixtral ? 2 : 8};
      if (s_.grouped() && z.experts % s_.n_group) z.experts = (z.experts / s_.n_group + 1) * s_.n_group;
      if (s_.grouped()) z.topk = std::min<int64_t>(z.topk, int64_t(s_.topk_group) * (z.experts / s_.n_group));
      out.push_back({{"tokens", z.tokens}, {"experts", z.experts}, {"topk", z.topk}});
    }
    return out;
  }

  baseline::BaselineResult run_baseline(std::string_view rule, Backend& backend, Runner& runner, const Spec& spec,
                                        const baseline::BaselineOptions& opt) const override {
    return moe_topk::run_baseline(*this, s_, rule, backend, runner, spec, opt);
  }

 private:
  Settings s_;
};

}  // namespace

ASSAY_REGISTER_OP("moe_topk", [](const Spec& spec) -> std::shared_ptr<const Op> {
  return std::make_shared<MoeTopkOp>(spec);
});

}  // namespace assay::moe_topk
