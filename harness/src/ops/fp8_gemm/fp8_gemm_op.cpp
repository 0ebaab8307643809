// fp8_gemm as an op on the generic core (ABI v1, docs/ops/fp8_gemm.md):
// d = (a · a_scale)(b · b_scale)ᵀ with FP8 a [m, k], b [n, k], f32 scales per
// 1 x 128 (a) and 128 x 128 (b) block, d bf16 or f32; any strides. The
// spec's `accumulate` and `promote_every` keys are its settings.
#include <algorithm>

#include "ops/fp8_gemm/fp8_gemm_baselines.h"
#include "ops/fp8_gemm/fp8_gemm_fuzz.h"
#include "ops/fp8_gemm/fp8_gemm_problem.h"
#include "ops/fp8_gemm/fp8_gemm_reference.h"
#include "ops/fp8_gemm/fp8_gemm_sweep.h"
#include "ops/fp8_gemm/fp8_gemm_tolerance.h"
#include "ops/op.h"

namespace assay::fp8_gemm {
namespace {

class Fp8GemmOp final : public Op {
 public:
  explicit Fp8GemmOp(const Spec& spec) {
    check_spec_keys(spec, {"accumulate", "promote_every"}, {"a", "a_scale", "b", "b_scale", "d"}, true);
    s_ = read_settings(spec);
  }
  std::string_view name() const override { return "fp8_gemm"; }

  void validate(const Case& c) const override { validate_case(c); }
  std::unique_ptr<EvalContext> context(const Case& c) const override { return std::make_unique<Context>(c); }
  std::unique_ptr<EvalContext> names_context() const override { return std::make_unique<Names>(); }

  std::vector<Case> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target) const override {
    return fp8_gemm::sweep(spec, seed, target);
  }
  std::optional<Case> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim) const override {
    return fp8_gemm::random_case(spec, seed, index, lim);
  }
  std::optional<Case> fit_requires(const Case& c, const Spec& spec) const override {
    return fp8_gemm::fit_requires(c, spec);
  }
  bool huge_case_fits(const Case& c, const SweepTarget& target) const override {
    return fp8_gemm::huge_case_fits(c, target);
  }

  double work(const Case& c) const override { return fp8_gemm::work(c); }
  double case_bytes(const Case& c) const override { return fp8_gemm::case_bytes(c); }
  double host_bytes(const Case& c, BackendKind backend) const override { return fp8_gemm::host_bytes(c, backend); }
  double default_timeout(const Case& c, BackendKind backend) const override {
    return fp8_gemm::default_timeout(c, backend);
  }
  double default_scale() const override { return kDefaultScale; }

  RecipeParams recipe_params(const Case& c, int tensor) const override { return fp8_gemm::recipe_params(c, tensor); }
  // Call 3's edit goes into a value or a scale: every one reaches d.
  SparseChange sparse_change(const Case& c) const override { return draw_sparse_change(c, {A, AS, B, BS}); }

  std::vector<std::vector<double>> reference(Backend& backend, const Case& c,
                                             std::span<const std::byte* const> device) const override {
    return reference_arrays(backend, c, device);
  }
  CompareStats judge(Backend& backend, const JudgeInput& in) const override {
    const ErrorModel e = error_model(s_, sizes_of(in.c).k, in.subnormals);
    return compare_case(backend, in.c, in.device, in.out, e, tolerance(in.c, e, in.scale), in.deadline,
                        in.keep_ref, in.keep_bound);
  }

  Case resize(const Case& c, std::span<const int64_t> sizes, bool keep_layout) const override {
    Parts p = parts_of(c);
    p.sizes = Sizes{std::max<int64_t>(1, sizes[0]), std::max<int64_t>(1, sizes[1]), std::max<int64_t>(1, sizes[2])};
    if (!keep_layout) p.a = p.a_scale = p.b = p.b_scale = p.d = Layout{};
    return make_case(p);
  }
  std::vector<Case> simplifications(const Case& c) const override {
    const Parts p = parts_of(c);
    std::vector<Case> out;
    Parts plain = p;
    plain.a = plain.a_scale = plain.b = plain.b_scale = plain.d = Layout{};
    out.push_back(make_case(plain));
    for (int t = 0; t < 5; ++t) {
      if (layout_at(p, t) == Layout{}) continue;
      Parts q = p;
      layout_at(q, t) = Layout{};
      out.push_back(make_case(q));
    }
    return out;
  }
  // col_major: MN-major (the scales' other layout).
  Case with_layout(const Case& c, int tensor, bool col_major, int64_t pad, int64_t offset) const override {
    Parts p = parts_of(c);
    layout_at(p, tensor) = Layout{col_major, pad, offset, 0, false};
    return make_case(p);
  }

  Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim) const override {
    return fp8_gemm::decode(data, size, spec, lim);
  }
  std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim) const override { return fp8_gemm::encode(c, lim); }
  Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) const override {
    return fp8_gemm::mutate(c, random, lim);
  }
  std::vector<Case> seed_cases(const Spec& spec) const override { return fp8_gemm::seed_cases(spec); }
  bool is_huge(const Case&, const CodecLimits&) const override { return false; }

  // DeepSeek-V3's layers as DeepGEMM's tests time them: a prefill (m 4096)
  // and a decode batch (m 128) against its (n, k) pairs.
  std::vector<BenchShape> bench_shapes() const override {
    return {{{"m", 4096}, {"n", 7168}, {"k", 2048}}, {{"m", 128}, {"n", 2112}, {"k", 7168}}};
  }
  // 2 flops a multiply-add; every input read once, d written once.
  BenchCost bench_cost(const Case& c) const override {
    BenchCost cost = Op::bench_cost(c);
    cost.flops = 2.0 * work(c);
    return cost;
  }

  baseline::BaselineResult run_baseline(std::string_view rule, Backend& backend, Runner& runner, const Spec& spec,
                                        const baseline::BaselineOptions& opt) const override {
    return fp8_gemm::run_baseline(*this, rule, backend, runner, spec, opt);
  }

 private:
  Settings s_;
};

}  // namespace

ASSAY_REGISTER_OP("fp8_gemm", [](const Spec& spec) -> std::shared_ptr<const Op> {
  return std::make_shared<Fp8GemmOp>(spec);
});

}  // namespace assay::fp8_gemm
