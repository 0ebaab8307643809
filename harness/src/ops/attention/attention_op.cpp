// attention as an op on the generic core (ABI v1, docs/ops/attention.md):
// o = softmax(scale · q kᵀ, causal bottom-right) v with grouped-query heads,
// and lse; q, k, v, o [b, h, s, d] with any strides. The spec's `p_dtype`,
// `empty_rows`, `writes` and `math` keys are its settings.
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "ops/attention/attention_baselines.h"
#include "ops/attention/attention_fuzz.h"
#include "ops/attention/attention_problem.h"
#include "ops/attention/attention_reference.h"
#include "ops/attention/attention_sweep.h"
#include "ops/attention/attention_tolerance.h"
#include "ops/op.h"

namespace assay::attention {
namespace {

class AttentionOp final : public Op {
 public:
  explicit AttentionOp(const Spec& spec) {
    check_spec_keys(spec, {"p_dtype", "empty_rows", "writes", "math"}, {});  // dtypes: read_settings (lse is optional)
    s_ = read_settings(spec);
  }
  std::string_view name() const override { return "attention"; }

  void validate(const Case& c) const override { validate_case(c, s_); }
  std::unique_ptr<EvalContext> context(const Case& c) const override { return std::make_unique<Context>(c); }
  std::unique_ptr<EvalContext> names_context() const override { return std::make_unique<Names>(); }

  std::vector<Case> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target) const override {
    return attention::sweep(spec, s_, seed, target);
  }
  std::optional<Case> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim) const override {
    return attention::random_case(spec, s_, seed, index, lim);
  }
  std::optional<Case> fit_requires(const Case& c, const Spec& spec) const override {
    return attention::fit_requires(c, spec);
  }
  bool huge_case_fits(const Case& c, const SweepTarget& target) const override {
    return attention::huge_case_fits(c, target);
  }

  double work(const Case& c) const override { return attention::work(c); }
  double case_bytes(const Case& c) const override { return attention::case_bytes(c); }
  double host_bytes(const Case& c, BackendKind backend) const override { return attention::host_bytes(c, backend); }
  double default_timeout(const Case& c, BackendKind backend) const override {
    return attention::default_timeout(c, backend);
  }
  double default_scale() const override { return kDefaultScale; }

  RecipeParams recipe_params(const Case& c, int tensor) const override { return attention::recipe_params(c, tensor); }
  // Call 3's edit goes into q, k or v: each is read whole by the last
  // query row (every key is visible to it, causal or not).
  SparseChange sparse_change(const Case& c) const override { return draw_sparse_change(c, {Q, K, V}); }

  std::vector<std::vector<double>> reference(Backend& backend, const Case& c,
                                             std::span<const std::byte* const> device) const override {
    return reference_arrays(backend, c, device, model_of(s_, Compute::f64));
  }
  CompareStats judge(Backend& backend, const JudgeInput& in) const override {
    return compare_case(backend, in.c, in.device, in.out, model_of(s_, in.compute),
                        tolerances(in.c, in.scale, in.subnormals), in.deadline, in.keep_ref, in.keep_bound);
  }

  Case resize(const Case& c, std::span<const int64_t> sizes, bool keep_layout) const override {
    Parts p = parts_of(c);
    Sizes z{std::max<int64_t>(1, sizes[0]), std::max<int64_t>(1, sizes[1]), std::max<int64_t>(1, sizes[2]),
            std::max<int64_t>(1, sizes[3]), std::max<int64_t>(1, sizes[4]),
            std::clamp<int64_t>(sizes[5], 1, kMaxHeadDim), std::clamp<int64_t>(sizes[6], 1, kMaxHeadDim)};
    z.hk = std::min(z.hk, z.hq);
    z.hq = z.hq / z.hk * z.hk;  // hq stays a multiple of hk
    if (usual_scale(p.scale, p.sizes.d)) p.scale = 1.0 / std::sqrt(double(z.d));
    p.sizes = z;
    if (!keep_layout) p.q = p.k = p.v = p.o = p.lse_layout = Layout{};
    return make_case(p);
  }
  std::vector<Case> simplifications(const Case& c) const override {
    const Parts p = parts_of(c);
    std::vector<Case> out;
    Parts plain = p;
    plain.q = plain.k = plain.v = plain.o = plain.lse_layout = Layout{};
    out.push_back(make_case(plain));
    for (int which = 0; which < 5; ++which) {
      if (which == LSE && !p.lse) break;
      Parts q = p;
      (which == Q ? q.q : which == K ? q.k : which == V ? q.v : which == O ? q.o : q.lse_layout) = Layout{};
      if (!(q.q == p.q && q.k == p.k && q.v == p.v && q.o == p.o && q.lse_layout == p.lse_layout))
        out.push_back(make_case(q));
    }
    if (p.causal) {  // no mask
      Parts q = p;
      q.causal = false;
      out.push_back(make_case(q));
    }
    if (!usual_scale(p.scale, p.sizes.d)) {  // the usual scale
      Parts q = p;
      q.scale = 1.0 / std::sqrt(double(p.sizes.d));
      out.push_back(make_case(q));
    }
    return out;
  }
  // col_major: the [b, s, h, d] memory order.
  Case with_layout(const Case& c, int tensor, bool col_major, int64_t pad, int64_t offset) const override {
    Parts p = parts_of(c);
    const Layout l{col_major, pad, 0, offset};
    (tensor == Q ? p.q : tensor == K ? p.k : tensor == V ? p.v : tensor == O ? p.o : p.lse_layout) = l;
    return make_case(p);
  }

  Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim) const override {
    return attention::decode(data, size, spec, s_, lim);
  }
  std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim) const override {
    return attention::encode(c, lim);
  }
  Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) const override {
    return attention::mutate(c, s_, random, lim);
  }
  std::vector<Case> seed_cases(const Spec& spec) const override { return attention::seed_cases(spec, s_); }
  bool is_huge(const Case&, const CodecLimits&) const override { return false; }

  // A Llama-3-8B-like layer (32 query heads over 8 key/value heads, d 128):
  // a prefill of 4096 tokens and a batch of 16 decode rows over 8192 keys.
  std::vector<BenchShape> bench_shapes() const override {
    return {{{"b", 1}, {"hq", 32}, {"hk", 8}, {"sq", 4096}, {"sk", 4096}, {"d", 128}, {"dv", 128}},
            {{"b", 16}, {"hq", 32}, {"hk", 8}, {"sq", 1}, {"sk", 8192}, {"d", 128}, {"dv", 128}}};
  }
  // 2 multiply-adds a visible (query, key) pair and head dim; every input
  // read once, every output written once.
  BenchCost bench_cost(const Case& c) const override {
    BenchCost cost = Op::bench_cost(c);
    cost.flops = 2.0 * work(c);
    return cost;
  }

  baseline::BaselineResult run_baseline(std::string_view rule, Backend& backend, Runner& runner, const Spec& spec,
                                        const baseline::BaselineOptions& opt) const override {
    return attention::run_baseline(*this, s_, rule, backend, runner, spec, opt);
  }

 private:
  Settings s_;
};

}  // namespace

ASSAY_REGISTER_OP("attention", [](const Spec& spec) -> std::shared_ptr<const Op> {
  return std::make_shared<AttentionOp>(spec);
});

}  // namespace assay::attention
