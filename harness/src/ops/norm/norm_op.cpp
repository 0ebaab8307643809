// layernorm and rmsnorm as ops on the generic core (ABI v1,
// docs/ops/layernorm.md, docs/ops/rmsnorm.md), on the shared row-wise
// pieces of ops/rows. One class, two registrations; the spec's `math` and
// `writes` keys are its settings.
#include <fmt/format.h>

#include "core/error.h"
#include "exec/patterns.h"
#include "ops/norm/norm_baselines.h"
#include "ops/norm/norm_fuzz.h"
#include "ops/norm/norm_problem.h"
#include "ops/norm/norm_reference.h"
#include "ops/norm/norm_sweep.h"
#include "ops/norm/norm_tolerance.h"
#include "ops/op.h"

namespace assay::norm {
namespace {

Inputs inputs_of(const Case& c, std::span<const std::byte* const> device) {
  const bool rms = is_rms(c);
  Inputs in;
  in.x = device[size_t(tensor_index(rms, X))], in.gx = c.geom(tensor_index(rms, X));
  in.w = device[size_t(tensor_index(rms, W))], in.gw = c.geom(tensor_index(rms, W));
  if (!rms) in.b = device[size_t(B)], in.gb = c.geom(B);
  return in;
}

// `writes: [y]`: every element of a statistics tensor must still hold the poison.
CompareStats untouched(const TensorGeom& g, const std::byte* out, int tensor) {
  CompareStats s;
  const uint64_t poison = poison_bits(g.dtype);
  const int size = dtype_bytes(g.dtype);
  for (int64_t r = 0; r < g.rows(); ++r)
    for (int64_t col = 0; col < g.cols(); ++col) {
      ++s.checked;
      const uint64_t bits = load_bits(g.dtype, out + g.index(r, col) * size);
      if (bits == poison) continue;
      ++s.bad;
      s.max_ratio = INFINITY;
      if (s.first_bad.size() < 8) s.first_bad.push_back({tensor, r, col, decode(g.dtype, poison), decode(g.dtype, bits), INFINITY, INFINITY});
    }
  return s;
}

class NormOp final : public Op {
 public:
  NormOp(const Spec& spec, bool rms) {
    check_spec(spec, rms);
    s_ = read_settings(spec, rms);
  }
  std::string_view name() const override { return op_name(s_.rms); }

  void validate(const Case& c) const override {
    validate_case(c);
    if (c.op != name()) throw InputError(fmt::format("a {} case given to op {}", c.op, name()));
  }
  std::unique_ptr<EvalContext> context(const Case& c) const override { return std::make_unique<Context>(c); }
  std::unique_ptr<EvalContext> names_context() const override {
    auto n = std::make_unique<Names>();
    n->rms = s_.rms;
    return n;
  }

  std::vector<Case> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target) const override {
    return norm::sweep(*this, spec, s_.rms, seed, target);
  }
  std::optional<Case> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim) const override {
    return norm::random_case(*this, spec, s_.rms, seed, index, lim);
  }
  std::optional<Case> fit_requires(const Case& c, const Spec& spec) const override { return norm::fit_requires(c, spec); }
  bool huge_case_fits(const Case& c, const SweepTarget& target) const override { return norm::huge_case_fits(c, target); }

  double work(const Case& c) const override { return norm::work(c); }
  double case_bytes(const Case& c) const override { return norm::case_bytes(c); }
  double host_bytes(const Case& c, BackendKind backend) const override { return norm::host_bytes(c, backend); }
  double default_timeout(const Case& c, BackendKind backend) const override { return norm::default_timeout(c, backend); }
  double default_scale() const override { return kDefaultScale; }

  RecipeParams recipe_params(const Case& c, int tensor) const override { return norm::recipe_params(c, tensor); }

  std::vector<std::vector<double>> reference(Backend& backend, const Case& c,
                                             std::span<const std::byte* const> device) const override {
    const rows::Shape s = rows::shape_of(c);
    const ErrorModel e = error_model(s_, Compute::f64, c, kDefaultScale);
    std::vector<std::vector<double>> out(c.tensors.size());
    const int iy = tensor_index(s_.rms, Y);
    out[size_t(iy)].resize(size_t(s.total_rows() * s.n));
    if (!s_.rms) out[MEAN].resize(size_t(s.total_rows())), out[RSTD].resize(size_t(s.total_rows()));
    reference_rows(backend, s, inputs_of(c, device), e, [&](const rows::RowBlock& b, const BlockOut& o) {
      std::copy(o.y_ref, o.y_ref + b.rows * s.n, out[size_t(iy)].begin() + b.row0 * s.n);
      if (s_.rms) return;
      std::copy(o.stat[MeanRef], o.stat[MeanRef] + b.rows, out[MEAN].begin() + b.row0);
      std::copy(o.stat[RstdRef], o.stat[RstdRef] + b.rows, out[RSTD].begin() + b.row0);
    });
    return out;
  }

  CompareStats judge(Backend& backend, const JudgeInput& in) const override {
    const Case& c = in.c;
    const rows::Shape s = rows::shape_of(c);
    const ErrorModel e = error_model(s_, in.compute, c, in.scale);
    const int iy = tensor_index(s_.rms, Y);
    const Tolerance ty = tolerance(c.tensors[size_t(iy)].dtype, in.compute, in.subnormals, false);
    const bool keep = in.keep_ref != nullptr;
    if (keep) {
      in.keep_ref->assign(c.tensors.size(), {}), in.keep_bound->assign(c.tensors.size(), {});
      (*in.keep_ref)[size_t(iy)].resize(size_t(s.total_rows() * s.n));
      (*in.keep_bound)[size_t(iy)].resize(size_t(s.total_rows() * s.n));
    }
    const size_t total_rows = size_t(s.total_rows());
    std::vector<double> stat[4];
    if (!s_.rms)
      for (auto& v : stat) v.resize(total_rows);
    CompareStats ys;
    const TensorGeom gy = c.geom(iy);
    // y judged where it lives; the statistics (one per row) come to the host.
    reference_rows(backend, s, inputs_of(c, in.device), e, [&](const rows::RowBlock& b, const BlockOut& o) {
      if (b.row0 > 0 && in.deadline.passed()) throw DeadlineReached("the comparison was still running at the deadline");
      const TensorGeom part = rows::block_geom(gy, s, b);
      if (s.n > 0) accumulate(ys, backend.compare(ty, part, in.out[size_t(iy)], o.y_ref, o.y_bound, nullptr, {}), b.row0);
      if (keep) {
        read_doubles(backend, o.y_ref, size_t(b.rows * s.n), (*in.keep_ref)[size_t(iy)].data() + b.row0 * s.n);
        read_doubles(backend, o.y_bound, size_t(b.rows * s.n), (*in.keep_bound)[size_t(iy)].data() + b.row0 * s.n);
      }
      if (!s_.rms)
        for (int i = 0; i < 4; ++i) read_doubles(backend, o.stat[i], size_t(b.rows), stat[i].data() + b.row0);
    }, ResultsIn::backend);
    for (BadElement& bad : ys.first_bad) bad.tensor = iy;
    if (s_.rms) return ys;
    CompareStats total = ys;
    for (int slot : {MEAN, RSTD}) {
      const TensorGeom g = c.geom(slot);
      const std::vector<std::byte> got = output_on_host(backend, in, slot);
      const double* ref = stat[slot == MEAN ? MeanRef : RstdRef].data();
      const double* bound = stat[slot == MEAN ? MeanBound : RstdBound].data();
      CompareStats part = s_.writes_stats
                              ? compare(tolerance(g.dtype, in.compute, in.subnormals, slot == MEAN), g, got.data(), ref,
                                        bound)
                              : untouched(g, got.data(), slot);
      for (BadElement& bad : part.first_bad) bad.tensor = slot;
      accumulate(total, part, 0);
      if (keep) {
        (*in.keep_ref)[size_t(slot)].assign(ref, ref + total_rows);
        (*in.keep_bound)[size_t(slot)].assign(bound, bound + total_rows);
      }
    }
    return total;
  }

  Case resize(const Case& c, std::span<const int64_t> sizes, bool keep_layout) const override {
    Parts p = parts_of(c);
    if (p.shape.batched) p.shape.b = sizes[0], p.shape.rows = sizes[1], p.shape.n = sizes[2];
    else p.shape.rows = sizes[0], p.shape.n = sizes[1];
    if (!keep_layout)
      for (rows::Layout& l : p.layout) {
        const bool broadcast = l.broadcast;
        l = rows::plain_like(l);
        l.broadcast = broadcast;  // stride 0 is the tensor's orientation, as transposed is
      }
    return make_case(p);
  }
  std::vector<Case> simplifications(const Case& c) const override {
    const Parts p = parts_of(c);
    std::vector<Case> out;
    Parts plain = p;
    for (rows::Layout& l : plain.layout) l = rows::Layout{};
    out.push_back(make_case(plain));
    for (int slot : slots(s_.rms)) {
      Parts q = p;
      q.layout[slot] = rows::Layout{};
      if (!(q.layout == p.layout)) out.push_back(make_case(q));
    }
    if (p.shape.batched) {  // the batch flattened into rows
      Parts q = plain;
      q.shape = rows::Shape{false, 1, p.shape.total_rows(), p.shape.n};
      out.push_back(make_case(q));
    }
    if (p.eps != 1e-5) {  // the common eps
      Parts q = p;
      q.eps = 1e-5;
      out.push_back(make_case(q));
    }
    return out;
  }
  Case with_layout(const Case& c, int tensor, bool col_major, int64_t pad, int64_t offset) const override {
    Parts p = parts_of(c);
    for (int slot : slots(s_.rms))
      if (tensor_index(s_.rms, slot) == tensor)
        p.layout[slot] = rows::Layout{col_major && slot_kind(slot) == rows::Kind::element, pad, offset, 0, false};
    return make_case(p);
  }

  Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim) const override {
    return rows::decode(codec(spec, s_.rms), data, size, lim);
  }
  std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim) const override {
    return rows::encode(codec(Spec{}, s_.rms), c, lim);
  }
  Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) const override {
    // The case's own dtypes survive a move: the genome makes the case anew
    // from a spec, so hand it one holding them.
    Spec spec;
    for (const CaseTensor& t : c.tensors) spec.set_dtype(t.name, t.dtype);
    Case m = rows::mutate(codec(spec, s_.rms), c, random, lim);
    m.scalars = c.scalars;
    return m;
  }
  std::vector<Case> seed_cases(const Spec& spec) const override { return norm::seed_cases(spec, s_.rms); }
  bool is_huge(const Case& c, const CodecLimits& lim) const override { return rows::is_huge(c, lim); }

  baseline::BaselineResult run_baseline(std::string_view rule, Backend& backend, Runner& runner, const Spec& spec,
                                        const baseline::BaselineOptions& opt) const override {
    return norm::run_baseline(*this, s_, rule, backend, runner, spec, opt);
  }

 private:
  Settings s_;
};

}  // namespace

ASSAY_REGISTER_OP("layernorm", [](const Spec& spec) -> std::shared_ptr<const Op> {
  return std::make_shared<NormOp>(spec, false);
});
ASSAY_REGISTER_OP("rmsnorm", [](const Spec& spec) -> std::shared_ptr<const Op> {
  return std::make_shared<NormOp>(spec, true);
});

}  // namespace assay::norm
