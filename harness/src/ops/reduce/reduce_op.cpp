// reduce as an op on the generic core (ABI v1, docs/ops/reduce.md): y = the
// sum, mean, max, min, argmax or argmin of x along the last dimension, x
// [rows, n] or [b, rows, n], y [rows] or [b, rows], any strides. The spec's
// `reduce`, `nan` and `ties` keys are its settings.
#include <fmt/format.h>

#include "core/error.h"
#include "ops/op.h"
#include "ops/reduce/reduce_baselines.h"
#include "ops/reduce/reduce_fuzz.h"
#include "ops/reduce/reduce_problem.h"
#include "ops/reduce/reduce_reference.h"
#include "ops/reduce/reduce_sweep.h"
#include "ops/reduce/reduce_tolerance.h"

namespace assay::reduce {
namespace {

class ReduceOp final : public Op {
 public:
  explicit ReduceOp(const Spec& spec) : compute_(spec.compute) {
    check_spec_keys(spec, {"reduce", "nan", "ties"}, {"x", "y"});
    s_ = read_settings(spec);
    codec_ = reduce::codec(spec, s_);
  }
  std::string_view name() const override { return "reduce"; }

  void validate(const Case& c) const override { validate_case(c, s_); }
  std::unique_ptr<EvalContext> context(const Case& c) const override { return std::make_unique<Context>(c); }
  std::unique_ptr<EvalContext> names_context() const override { return std::make_unique<Names>(); }

  std::vector<Case> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target) const override {
    return reduce::sweep(spec, s_, seed, target);
  }
  std::optional<Case> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim) const override {
    return reduce::random_case(spec, s_, seed, index, lim);
  }
  std::optional<Case> fit_requires(const Case& c, const Spec& spec) const override {
    return reduce::fit_requires(c, spec);
  }
  bool huge_case_fits(const Case& c, const SweepTarget& target) const override {
    return reduce::huge_case_fits(c, target);
  }

  double work(const Case& c) const override { return reduce::work(c); }
  double case_bytes(const Case& c) const override { return reduce::case_bytes(c); }
  double host_bytes(const Case& c, BackendKind backend) const override { return reduce::host_bytes(c, backend); }
  double default_timeout(const Case& c, BackendKind backend) const override {
    return reduce::default_timeout(c, backend);
  }
  double default_scale() const override { return kDefaultScale; }

  RecipeParams recipe_params(const Case& c, int tensor) const override {
    return reduce::recipe_params(c, tensor, s_, compute_);
  }

  std::vector<std::vector<double>> reference(Backend& backend, const Case& c,
                                             std::span<const std::byte* const> device) const override {
    const rows::Shape s = rows::shape_of(c);
    const ErrorModel e = error_model(s_, Compute::f64, c.tensors[X].dtype, Subnormals::ieee);
    std::vector<std::vector<double>> out(2);
    out[Y].resize(size_t(s.total_rows()));
    reference_rows(backend, s, c.geom(X), device[X], c.geom(Y), nullptr, e,
                   [&](const rows::RowBlock& b, const double* ref, const double*) {
                     std::copy(ref, ref + b.rows, out[Y].begin() + b.row0);
                   });
    return out;
  }

  CompareStats judge(Backend& backend, const JudgeInput& in) const override {
    const Case& c = in.c;
    const rows::Shape s = rows::shape_of(c);
    const ErrorModel e = error_model(s_, in.compute, c.tensors[X].dtype, in.subnormals);
    const Tolerance tol = tolerance(c.tensors[Y].dtype, in.scale, in.subnormals);
    const bool keep = in.keep_ref != nullptr;
    if (keep) in.keep_ref->assign(2, {}), in.keep_bound->assign(2, {});
    // One value per row (ties: any reads the kernel's answers): y is judged on the host.
    const std::vector<std::byte> y = output_on_host(backend, in, Y);
    return compare_rows(backend, s, c.geom(X), in.device[X], c.geom(Y), y.data(), e, tol, in.deadline,
                        keep ? &(*in.keep_ref)[Y] : nullptr, keep ? &(*in.keep_bound)[Y] : nullptr);
  }

  Case resize(const Case& c, std::span<const int64_t> sizes, bool keep_layout) const override {
    Parts p = parts_of(c);
    if (p.shape.batched) p.shape.b = sizes[0], p.shape.rows = sizes[1], p.shape.n = sizes[2];
    else p.shape.rows = sizes[0], p.shape.n = sizes[1];
    if (is_extreme(s_.op)) p.shape.n = std::max<int64_t>(p.shape.n, 1);
    if (!keep_layout) p.x = rows::plain_like(p.x), p.y = rows::plain_like(p.y);
    return make_case(p);
  }
  std::vector<Case> simplifications(const Case& c) const override {
    const Parts p = parts_of(c);
    std::vector<Case> out;
    Parts plain = p;
    plain.x = plain.y = rows::Layout{};
    out.push_back(make_case(plain));
    for (int which = 0; which < 2; ++which) {
      Parts q = p;
      (which == X ? q.x : q.y) = rows::Layout{};
      out.push_back(make_case(q));
    }
    if (p.shape.batched) {  // the batch flattened into rows
      Parts q = plain;
      q.shape = rows::Shape{false, 1, p.shape.total_rows(), p.shape.n};
      out.push_back(make_case(q));
    }
    return out;
  }
  Case with_layout(const Case& c, int tensor, bool col_major, int64_t pad, int64_t offset) const override {
    Parts p = parts_of(c);
    // y has one value per row: no orientation, only a stride and an offset.
    (tensor == X ? p.x : p.y) = rows::Layout{tensor == X && col_major, pad, offset, 0, false};
    return make_case(p);
  }

  Case decode(const uint8_t* data, size_t size, const Spec&, const CodecLimits& lim) const override {
    return rows::decode(codec_, data, size, lim);
  }
  std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim) const override {
    return rows::encode(codec_, c, lim);
  }
  Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) const override {
    return rows::mutate(codec_, c, random, lim);
  }
  std::vector<Case> seed_cases(const Spec& spec) const override { return reduce::seed_cases(spec, s_); }
  bool is_huge(const Case& c, const CodecLimits& lim) const override { return rows::is_huge(c, lim); }

  baseline::BaselineResult run_baseline(std::string_view rule, Backend& backend, Runner& runner, const Spec& spec,
                                        const baseline::BaselineOptions& opt) const override {
    return reduce::run_baseline(*this, s_, rule, backend, runner, spec, opt);
  }

 private:
  Settings s_;
  Compute compute_;
  rows::Codec codec_;
};

}  // namespace

ASSAY_REGISTER_OP("reduce", [](const Spec& spec) -> std::shared_ptr<const Op> { return std::make_shared<ReduceOp>(spec); });

}  // namespace assay::reduce
