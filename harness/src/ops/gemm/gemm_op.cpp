// GEMM as an op on the generic core: C = alpha * A * B + beta * C0 (ABI v1,
// docs/abi.md). Each entry point converts the generic Case to GEMM's typed
// Problem and calls the GEMM code beside it.
#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/yaml_input.h"
#include "exec/patterns.h"
#include "ops/gemm/gemm_baseline_common.h"
#include "ops/gemm/gemm_fuzz.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_reference.h"
#include "ops/gemm/gemm_tolerance.h"
#include "ops/op.h"

namespace assay::gemm {
namespace {

std::vector<Case> cases_of(const std::vector<Problem>& ps) {
  std::vector<Case> out;
  out.reserve(ps.size());
  for (const Problem& p : ps) out.push_back(to_case(p));
  return out;
}
std::optional<Case> case_of(const std::optional<Problem>& p) {
  if (!p) return std::nullopt;
  return to_case(*p);
}

// The requires' names: m, n, k, alpha, beta and A, B, C.
struct Names final : EvalContext {
  std::optional<double> variable(std::string_view n) const override {
    if (n == "m" || n == "n" || n == "k" || n == "alpha" || n == "beta") return 0.0;
    return std::nullopt;
  }
  std::optional<TensorGeom> tensor(std::string_view n) const override {
    if (n == "A" || n == "B" || n == "C") return TensorGeom{};
    return std::nullopt;
  }
};

// A layout's orientation, padding beyond its rows (column-major) or columns
// (row-major), and offset: what shrinking keeps while dimensions move.
struct LayoutParts {
  bool col_major;
  int64_t pad, offset;
};
LayoutParts layout_parts(const Layout& l, int64_t rows, int64_t cols) {
  const bool col = l.row_stride == 1 && l.col_stride != 1;
  const int64_t pad = col ? l.col_stride - std::max<int64_t>(rows, 1) : l.row_stride - std::max<int64_t>(cols, 1);
  return {col, std::max<int64_t>(pad, 0), l.offset};
}

// What GEMM keeps of a judged call (JudgeInput::memo): its FP64 products.
struct GemmMemo final : JudgeMemo {
  reference::KeptProducts products;
};

class GemmOp final : public Op {
 public:
  // dtypes keys a, b, c (matched to A, B, C without regard to case).
  explicit GemmOp(const Spec& spec) { check_spec_keys(spec, {}, {"a", "b", "c"}); }
  std::string_view name() const override { return "gemm"; }

  void validate(const Case& c) const override { validate_case(c); }
  std::unique_ptr<EvalContext> context(const Case& c) const override {
    return std::make_unique<Context>(problem(c));
  }
  std::unique_ptr<EvalContext> names_context() const override { return std::make_unique<Names>(); }

  std::vector<Case> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target) const override {
    return cases_of(gemm::sweep(spec, seed, target));
  }
  std::optional<Case> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim) const override {
    return case_of(gemm::random_case(spec, seed, index, lim));
  }
  std::optional<Case> fit_requires(const Case& c, const Spec& spec) const override {
    return case_of(gemm::fit_requires(problem(c), spec));
  }
  bool huge_case_fits(const Case& c, const SweepTarget& target) const override {
    return gemm::huge_case_fits(problem(c), target);
  }

  double work(const Case& c) const override { return gemm::work(problem(c)); }
  double case_bytes(const Case& c) const override { return gemm::case_bytes(problem(c)); }
  double host_bytes(const Case& c, BackendKind backend) const override { return gemm::host_bytes(problem(c), backend); }
  double default_timeout(const Case& c, BackendKind backend) const override {
    return gemm::default_timeout(problem(c), backend);
  }

  RecipeParams recipe_params(const Case& c, int tensor) const override {
    return gemm::recipe_params(problem(c), Operand(tensor));
  }
  bool reads_initial(const Case& c, int tensor) const override {
    return tensor == C && c.scalars.size() == 2 && c.scalars[1].value != 0.0;
  }
  SparseChange sparse_change(const Case& c) const override { return gemm::sparse_change(problem(c)); }
  Relabeling relabeling(const Case& c) const override { return gemm::relabeling(problem(c)); }

  std::vector<std::vector<double>> reference(Backend& backend, const Case& c,
                                             std::span<const std::byte* const> device) const override {
    const Problem p = problem(c);
    auto r = gemm::reference(backend, p, device[A], device[B], reads_c0(p) ? device[C] : nullptr);
    std::vector<std::vector<double>> out(3);
    out[C] = std::move(r.ref);
    return out;
  }

  CompareStats judge(Backend& backend, const JudgeInput& in) const override {
    const Problem p = problem(in.c);
    const Tolerance tol = tolerance(p, in.compute, in.scale, poison_bits(p.c_type), in.subnormals);
    ClassReferences class_refs(backend);  // the inputs as a narrower compute type holds them (docs/tolerance.md)
    if (needs_class_reference(p, in.compute))
      class_references(class_refs, p, in.compute, {in.params[A], in.params[B], in.params[C]}, in.seed);
    // The products of the call before, where this call's inputs are a sparse change of its.
    reference::ProductReuse reuse;
    // A rank-1 update (a row of B changed) is exact enough only for a compute type coarser than FP64 (ProductReuse).
    const bool rank_one_exact = in.compute != Compute::f64;
    if (in.memo && backend.kind() == BackendKind::cuda) {
      if (!dynamic_cast<GemmMemo*>(in.memo->get())) *in.memo = std::make_unique<GemmMemo>();
      reuse.kept = &static_cast<GemmMemo&>(**in.memo).products;
      switch (in.since_memo.kind) {
        case InputDelta::Kind::fresh: break;
        case InputDelta::Kind::same: reuse.derivable = true; break;
        case InputDelta::Kind::sparse:
          gemm::changed_parts(*in.since_memo.change, reuse.changed_rows, reuse.changed_cols, reuse.changed_b_row);
          reuse.derivable = reuse.changed_b_row < 0 || rank_one_exact;
          break;
        case InputDelta::Kind::relabeled: {  // C's rotation is the products' (gemm::relabeling)
          const std::vector<Rotation>& of = in.since_memo.relabeling->of;
          reuse.derivable = of.size() == 3;
          if (reuse.derivable) reuse.rotate_rows = of[C].by_rows, reuse.rotate_cols = of[C].by_cols;
          break;
        }
      }
      // The next call changes a row of B: its values now, for that call's rank-1 update.
      if (const SparseChange* next = in.upcoming; next && next->tensor == B && next->patch.row >= 0 && rank_one_exact)
        reuse.keep_b_row = next->patch.row;
    }
    ReferenceResult kept;
    const bool keep = in.keep_ref != nullptr;
    CompareStats s = compare_to_reference(backend, p, tol, in.out[C], in.device[A], in.device[B],
                                          reads_c0(p) ? in.device[C] : nullptr, in.deadline, keep ? &kept : nullptr,
                                          &class_refs, reuse.kept ? &reuse : nullptr);
    for (BadElement& e : s.first_bad) e.tensor = C;
    if (in.aggregate_precision) s.excess = rms_excess(p, in.compute, s);
    if (keep) {
      in.keep_ref->assign(3, {}), in.keep_bound->assign(3, {});
      (*in.keep_ref)[C] = std::move(kept.ref), (*in.keep_bound)[C] = std::move(kept.bound);
    }
    return s;
  }

  Case resize(const Case& c, std::span<const int64_t> sizes, bool keep_layout) const override {
    const Problem old = problem(c);
    Problem x = old;
    x.m = sizes[0], x.n = sizes[1], x.k = sizes[2];
    // Padding is kept as padding (beyond the new rows or columns), not as a stride.
    auto relayout = [&](const Layout& l, int64_t old_rows, int64_t old_cols, int64_t rows, int64_t cols) {
      const LayoutParts parts = layout_parts(l, old_rows, old_cols);
      return make_layout(rows, cols, parts.col_major, keep_layout ? parts.pad : 0, keep_layout ? parts.offset : 0);
    };
    x.a = relayout(old.a, old.m, old.k, x.m, x.k), x.b = relayout(old.b, old.k, old.n, x.k, x.n);
    x.c = relayout(old.c, old.m, old.n, x.m, x.n);
    return to_case(x);
  }
  std::vector<Case> simplifications(const Case& c) const override {
    const Problem p = problem(c);
    std::vector<Case> out;
    // Layouts: compact, row-major, no offsets; all at once, then one tensor at a time.
    Problem plain = p;
    plain.a = make_layout(p.m, p.k, false), plain.b = make_layout(p.k, p.n, false), plain.c = make_layout(p.m, p.n, false);
    out.push_back(to_case(plain));
    const int64_t rows[3] = {p.m, p.k, p.m}, cols[3] = {p.k, p.n, p.n};
    for (int which = 0; which < 3; ++which) {
      Problem x = p;
      Layout* l[3] = {&x.a, &x.b, &x.c};
      *l[which] = make_layout(rows[which], cols[which], false);
      out.push_back(to_case(x));
    }
    // Scalars: alpha = 1, beta = 0.
    for (auto [alpha, beta] : {std::pair{1.0, 0.0}, {1.0, p.beta}, {p.alpha, 0.0}}) {
      Problem x = p;
      x.alpha = alpha, x.beta = beta;
      out.push_back(to_case(x));
    }
    return out;
  }
  Case with_layout(const Case& c, int tensor, bool col_major, int64_t pad, int64_t offset) const override {
    Problem x = problem(c);
    const int64_t rows[3] = {x.m, x.k, x.m}, cols[3] = {x.k, x.n, x.n};
    Layout* l[3] = {&x.a, &x.b, &x.c};
    *l[tensor] = make_layout(rows[tensor], cols[tensor], col_major, pad, offset);
    return to_case(x);
  }

  Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim) const override {
    return to_case(gemm::decode(data, size, spec, lim));
  }
  std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim) const override {
    return gemm::encode(problem(c), lim);
  }
  Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) const override {
    return to_case(gemm::mutate(problem(c), random, lim));
  }
  std::vector<Case> seed_cases(const Spec& spec) const override { return cases_of(gemm::seed_cases(spec)); }

  // Square, a wide-k projection, and a decode step (16 tokens through an MLP's up projection).
  std::vector<BenchShape> bench_shapes() const override {
    return {{{"m", 4096}, {"n", 4096}, {"k", 4096}}, {{"m", 8192}, {"n", 8192}, {"k", 1024}},
            {{"m", 16}, {"n", 4096}, {"k", 14336}}};
  }
  BenchCost bench_cost(const Case& c) const override {
    BenchCost cost = Op::bench_cost(c);
    const gemm::Problem p = problem(c);
    if (p.alpha != 0) cost.flops = 2 * gemm::work(p);  // a multiply and an add per term
    return cost;
  }

  baseline::BaselineResult run_baseline(std::string_view rule, Backend& backend, Runner& runner, const Spec& spec,
                                        const baseline::BaselineOptions& opt) const override {
    if (rule == "kernelbench") return gemm::run_kernelbench(backend, runner, spec, opt);
    if (rule == "tutorial") return gemm::run_tutorial(backend, runner, spec, opt);
    if (rule == "assert_close") return gemm::run_assert_close(backend, runner, spec, opt);
    baseline::BaselineResult r;
    r.checker = std::string(rule), r.applicable = false, r.detail = "no such rule for gemm";
    return r;
  }
};

}  // namespace

const Op& op_of_gemm() {
  static const std::shared_ptr<const Op> op = std::make_shared<GemmOp>(Spec{});
  return *op;
}

ASSAY_REGISTER_OP("gemm", [](const Spec& spec) -> std::shared_ptr<const Op> { return std::make_shared<GemmOp>(spec); });

}  // namespace assay::gemm
