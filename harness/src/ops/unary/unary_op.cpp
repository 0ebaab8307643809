// The unary activations as one op on the generic core (ABI v1,
// docs/ops/unary.md): y = fn(x) element by element, fn one of relu, gelu,
// gelu_tanh, silu, sigmoid, exp, tanh (the spec's `fn`), x and y N-D with
// sizes {rows, n} or {b, rows, n} through ops/rows. The spec's `fn` and
// `math` keys are its settings.
#include <fmt/format.h>

#include "core/error.h"
#include "ops/op.h"
#include "ops/unary/unary_baselines.h"
#include "ops/unary/unary_fuzz.h"
#include "ops/unary/unary_problem.h"
#include "ops/unary/unary_reference.h"
#include "ops/unary/unary_sweep.h"
#include "ops/unary/unary_tolerance.h"

namespace assay::unary {
namespace {

class UnaryOp final : public Op {
 public:
  explicit UnaryOp(const Spec& spec) {
    check_spec_keys(spec, {"fn", "math"}, {"x", "y"});
    s_ = read_settings(spec);
  }
  std::string_view name() const override { return kOpName; }

  void validate(const Case& c) const override { validate_case(c); }
  std::unique_ptr<EvalContext> context(const Case& c) const override { return std::make_unique<Context>(c); }
  std::unique_ptr<EvalContext> names_context() const override { return std::make_unique<Names>(); }

  std::vector<Case> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target) const override {
    return unary::sweep(spec, seed, target);
  }
  std::optional<Case> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim) const override {
    return unary::random_case(spec, seed, index, lim);
  }
  std::optional<Case> fit_requires(const Case& c, const Spec& spec) const override {
    return unary::fit_requires(c, spec);
  }
  bool huge_case_fits(const Case& c, const SweepTarget& target) const override {
    return unary::huge_case_fits(c, target);
  }

  double work(const Case& c) const override { return unary::work(c); }
  double case_bytes(const Case& c) const override { return unary::case_bytes(c); }
  double host_bytes(const Case& c, BackendKind backend) const override { return unary::host_bytes(c, backend); }
  double default_timeout(const Case& c, BackendKind backend) const override {
    return unary::default_timeout(c, backend);
  }
  double default_scale() const override { return kDefaultScale; }

  RecipeParams recipe_params(const Case& c, int tensor) const override { return unary::recipe_params(c, tensor); }

  std::vector<std::vector<double>> reference(Backend& backend, const Case& c,
                                             std::span<const std::byte* const> device) const override {
    const Shape s = rows::shape_of(c);
    const ErrorModel e = error_model(s_, Compute::f64, c.tensors[X].dtype);
    std::vector<std::vector<double>> out(2);
    out[Y].resize(size_t(s.total_rows()) * size_t(s.n));
    reference_blocks(backend, s, c.geom(X), device[X], e, [&](const rows::RowBlock& b, const double* ref, const double*) {
      if (ref) std::copy(ref, ref + b.rows * s.n, out[Y].begin() + b.row0 * s.n);
    });
    return out;
  }

  CompareStats judge(Backend& backend, const JudgeInput& in) const override {
    const Case& c = in.c;
    const Shape s = rows::shape_of(c);
    const ErrorModel e = error_model(s_, in.compute, c.tensors[X].dtype);
    const Tolerance tol = tolerance(c.tensors[Y].dtype, in.compute, in.scale, in.subnormals);
    const bool keep = in.keep_ref != nullptr;
    if (keep) in.keep_ref->assign(2, {}), in.keep_bound->assign(2, {});
    return compare_blocks(backend, s, c.geom(X), in.device[X], c.geom(Y), in.out[Y], e, tol, in.deadline,
                          keep ? &(*in.keep_ref)[Y] : nullptr, keep ? &(*in.keep_bound)[Y] : nullptr);
  }

  Case resize(const Case& c, std::span<const int64_t> sizes, bool keep_layout) const override {
    Parts p = parts_of(c);
    if (p.shape.batched) p.shape.b = sizes[0], p.shape.rows = sizes[1], p.shape.n = sizes[2];
    else p.shape.rows = sizes[0], p.shape.n = sizes[1];
    if (!keep_layout) p.x = rows::plain_like(p.x), p.y = rows::plain_like(p.y);
    return make_case(p);
  }
  std::vector<Case> simplifications(const Case& c) const override {
    const Parts p = parts_of(c);
    std::vector<Case> out;
    Parts plain = p;
    plain.x = plain.y = Layout{};
    out.push_back(make_case(plain));
    for (int which = 0; which < 2; ++which) {
      Parts q = p;
      (which == X ? q.x : q.y) = Layout{};
      out.push_back(make_case(q));
    }
    if (p.shape.batched) {  // the batch flattened into rows
      Parts q = plain;
      q.shape = Shape{false, 1, p.shape.total_rows(), p.shape.n};
      out.push_back(make_case(q));
    }
    return out;
  }
  Case with_layout(const Case& c, int tensor, bool col_major, int64_t pad, int64_t offset) const override {
    Parts p = parts_of(c);
    (tensor == X ? p.x : p.y) = Layout{col_major, pad, offset, 0, false};
    return make_case(p);
  }

  Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim) const override {
    return unary::decode(data, size, spec, lim);
  }
  std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim) const override { return unary::encode(c, lim); }
  Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) const override {
    return unary::mutate(c, random, lim);
  }
  std::vector<Case> seed_cases(const Spec& spec) const override { return unary::seed_cases(spec); }
  bool is_huge(const Case& c, const CodecLimits& lim) const override { return unary::is_huge(c, lim); }

  baseline::BaselineResult run_baseline(std::string_view rule, Backend& backend, Runner& runner, const Spec& spec,
                                        const baseline::BaselineOptions& opt) const override {
    return unary::run_baseline(*this, s_, rule, backend, runner, spec, opt);
  }

 private:
  Settings s_;
};

}  // namespace

ASSAY_REGISTER_OP("unary", [](const Spec& spec) -> std::shared_ptr<const Op> {
  return std::make_shared<UnaryOp>(spec);
});

}  // namespace assay::unary
