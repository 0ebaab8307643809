// `op: custom` (docs/ops/custom.md): an op whose spec declares its tensors,
// sizes, scalars, reference and tolerance. The reference is the user's C++
// (custom_reference.h), run on FP64 copies of the inputs; the judge applies
// the spec's tolerance form per output element.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "exec/patterns.h"
#include "ops/custom/custom_cases.h"
#include "ops/custom/custom_def.h"
#include "ops/custom/custom_reference.h"
#include "ops/op.h"

namespace assay::custom {
namespace {

// ref is NaN or an infinity, and got is NaN too or the same infinity.
bool same_class(double got, double ref) { return std::isnan(ref) ? std::isnan(got) : got == ref; }

// The declared names, for the spec's requires.
struct DeclaredNames final : EvalContext {
  const Def& def;
  explicit DeclaredNames(const Def& d) : def(d) {}
  std::optional<double> variable(std::string_view n) const override {
    for (auto& s : def.sizes)
      if (s.name == n) return 1.0;
    for (auto& s : def.scalars)
      if (s.name == n) return 0.0;
    return std::nullopt;
  }
  std::optional<TensorGeom> tensor(std::string_view n) const override {
    for (auto& t : def.tensors)
      if (t.name == n) return TensorGeom{};
    return std::nullopt;
  }
};

// One output's comparison. ref64: the FP64 reference; same: the
// same-precision build's result (vs_same_precision; else null).
struct OutputCheck {
  const ToleranceDef& tol;
  double scale;             // T (--tolerance-scale; 1 by default for custom ops)
  bool poisoned;            // pure output: poison marks an element never written
  bool flush;               // spec `subnormals: flush`
  const TensorGeom& g;
  const std::byte* out;
  const std::vector<double>& ref64;
  const std::vector<double>* same;
  std::vector<double>* keep_bound;

  CompareStats run() const {
    constexpr size_t kKeepBad = 8;
    CompareStats s;
    const DType t = g.dtype;
    const int size = dtype_bytes(t);
    const uint64_t poison = poison_bits(t);
    const double min_normal = std::ldexp(1.0, min_normal_exp(t));
    const int64_t rows = g.rows(), cols = g.cols();
    if (keep_bound) keep_bound->assign(size_t(rows * cols), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const size_t i = size_t(r * cols + c);
        const uint64_t bits = load_bits(t, out + g.index(r, c) * size);
        const double got = assay::decode(t, bits), ref = ref64[i], expected = round_to(t, ref);
        const double other = same ? (*same)[i] : ref;
        ++s.checked;
        bool ok = false, class_error = false;
        double allowed = 0, err = 0;
        if (poisoned && bits == poison) {
          ++s.unwritten;
        } else if (!std::isfinite(ref)) {
          ok = same_class(got, ref);  // NaN for NaN, the same infinity for an infinity
          class_error = !ok;
        } else if (!std::isfinite(got)) {
          // A finite reference: an infinity only where it overflows the
          // output type, or where the same-precision build is non-finite too.
          ok = (std::isinf(got) && got == expected) || (!std::isfinite(other) && same_class(got, other));
          class_error = !ok;
        } else {
          switch (tol.form) {
            case ToleranceForm::ulps:
              err = ulp_distance(t, got, expected);
              allowed = scale * tol.ulps;
              ok = err <= allowed;
              if (keep_bound) (*keep_bound)[i] = allowed * ulp_of(t, expected);
              break;
            case ToleranceForm::relative:
              err = std::fabs(got - ref);
              allowed = scale * (tol.absolute + tol.relative * std::fabs(ref));
              ok = err <= allowed;
              break;
            case ToleranceForm::same_precision:
              // k times the same-precision build's error, plus a, plus half an
              // ulp of the output type: the candidate's own final rounding.
              err = std::fabs(got - ref);
              allowed = scale * (tol.factor * std::fabs(other - ref) + tol.absolute) + 0.5 * ulp_of(t, ref);
              if (std::isnan(allowed)) allowed = INFINITY;  // the same-precision build overflowed: any finite value
              ok = err <= allowed;
              break;
          }
          // `subnormals: flush`: a subnormal result may come back as zero.
          if (!ok && flush && std::fabs(got - expected) <= min_normal) ok = true;
          if (keep_bound && tol.form != ToleranceForm::ulps) (*keep_bound)[i] = allowed;
        }
        const double ulps = ulp_distance(t, got, expected);
        const double ratio = allowed > 0 ? err / allowed : (ok ? 0 : INFINITY);
        if (std::isfinite(ulps)) s.max_ulps = std::max(s.max_ulps, ulps);
        if (!ok || allowed > 0) s.max_ratio = std::max(s.max_ratio, ratio);
        if (ok) continue;
        ++s.bad;
        if (class_error) ++s.bad_class;
        if (s.first_bad.size() < kKeepBad) s.first_bad.push_back({0, r, c, expected, got, ulps, ratio});
      }
    return s;
  }
};

class CustomOp final : public Op {
 public:
  explicit CustomOp(const Spec& spec) : def_(parse_def(spec)), refs_(std::make_shared<References>(spec, def_)) {}
  std::string_view name() const override { return "custom"; }

  void validate(const Case& c) const override {
    auto bad = [&](const std::string& why) {
      throw InputError(fmt::format("not a case of this custom op: {} ({})", why, describe(c)));
    };
    if (c.sizes.size() != def_.sizes.size()) bad(fmt::format("it has {} sizes, the spec {}", c.sizes.size(), def_.sizes.size()));
    for (size_t d = 0; d < def_.sizes.size(); ++d) {
      const SizeDef& s = def_.sizes[d];
      if (c.sizes[d].name != s.name) bad(fmt::format("size {} must be {}", d, s.name));
      if (c.sizes[d].value < s.min || c.sizes[d].value > s.max)
        bad(fmt::format("{}={} is outside the spec's range [{}, {}]", s.name, c.sizes[d].value, s.min, s.max));
    }
    if (c.tensors.size() != def_.tensors.size())
      bad(fmt::format("it has {} tensors, the spec {}", c.tensors.size(), def_.tensors.size()));
    const auto sizes = sizes_of(c);
    for (size_t i = 0; i < def_.tensors.size(); ++i) {
      const TensorDef& td = def_.tensors[i];
      const CaseTensor& t = c.tensors[i];
      if (t.name != td.name) bad(fmt::format("tensor {} must be {}", i, td.name));
      if (t.role != td.role) bad(fmt::format("{} must be {}", t.name, assay::name(td.role)));
      const auto shape = def_.shape(int(i), sizes);
      if (!shape) bad(fmt::format("the shape of {} has no integer value for these sizes", t.name));
      if (t.shape != *shape) bad(fmt::format("{} must have shape [{}]", t.name, fmt::join(*shape, ", ")));
      if (t.strides.size() != t.shape.size() ||
          std::any_of(t.strides.begin(), t.strides.end(), [](int64_t s) { return s < 1; }) || t.offset < 0)
        bad(fmt::format("{} needs a positive stride per dimension and an offset >= 0", t.name));
    }
    if (c.scalars.size() != def_.scalars.size())
      bad(fmt::format("it has {} scalars, the spec {}", c.scalars.size(), def_.scalars.size()));
    for (size_t j = 0; j < def_.scalars.size(); ++j)
      if (c.scalars[j].name != def_.scalars[j].name) bad(fmt::format("scalar {} must be {}", j, def_.scalars[j].name));
  }
  std::unique_ptr<EvalContext> names_context() const override { return std::make_unique<DeclaredNames>(def_); }

  std::vector<Case> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target) const override {
    return custom::sweep(def_, spec, seed, target);
  }
  std::optional<Case> random_case(const Spec& spec, uint64_t seed, uint64_t index, const GenLimits& lim) const override {
    return custom::random_case(def_, spec, seed, index, lim);
  }
  std::optional<Case> fit_requires(const Case& c, const Spec& spec) const override { return fit(def_, spec, c); }
  bool huge_case_fits(const Case& c, const SweepTarget& target) const override {
    return target.backend == BackendKind::cuda && case_bytes(c) <= target.max_bytes &&
           host_bytes(c, target.backend) <= target.max_host_bytes;
  }

  double work(const Case& c) const override { return elements(c); }
  double case_bytes(const Case& c) const override { return custom::case_bytes(c); }
  double host_bytes(const Case& c, BackendKind backend) const override { return custom::host_bytes(def_, c, backend); }
  double default_timeout(const Case& c, BackendKind backend) const override {
    return 10.0 + elements(c) / (backend == BackendKind::host ? 1e7 : 1e9);
  }
  // The spec's tolerance is the user's own: taken as written.
  double default_scale() const override { return 1.0; }

  RecipeParams recipe_params(const Case& c, int tensor) const override { return custom::recipe_params(c, tensor); }

  std::vector<std::vector<double>> reference(Backend& backend, const Case& c,
                                             std::span<const std::byte* const> device) const override {
    std::vector<std::vector<double>> data = widened(backend, c, device);
    refs_->run(0, c, data);
    for (size_t i = 0; i < c.tensors.size(); ++i)
      if (c.tensors[i].role == Role::input) data[i].clear();
    return data;
  }

  CompareStats judge(Backend& backend, const JudgeInput& in) const override {
    const Case& c = in.c;
    const size_t n = c.tensors.size();
    const std::vector<std::vector<double>> inputs = widened(backend, c, in.device);
    std::vector<std::vector<double>> ref64 = inputs;
    refs_->run(0, c, ref64);
    // vs_same_precision: the reference built for each output's dtype (f64
    // outputs: the FP64 build itself), on the same widened inputs.
    std::vector<std::vector<double>> same[4];
    if (def_.tolerance.form == ToleranceForm::same_precision)
      for (size_t i = 0; i < n; ++i) {
        const int mode = reference_mode(c.tensors[i].dtype);
        if (c.tensors[i].role == Role::input || mode == 0 || !same[mode].empty()) continue;
        same[mode] = inputs;
        refs_->run(mode, c, same[mode]);
      }
    CompareStats total;
    if (in.keep_ref) in.keep_ref->assign(n, {}), in.keep_bound->assign(n, {});
    for (size_t i = 0; i < n; ++i) {
      if (c.tensors[i].role == Role::input) continue;
      const TensorGeom g = c.geom(int(i));
      const std::vector<std::byte> got = output_on_host(backend, in, int(i));  // the user's reference runs on the host
      const int mode = reference_mode(g.dtype);
      const std::vector<double>* other =
          def_.tolerance.form == ToleranceForm::same_precision ? (mode == 0 ? &ref64[i] : &same[mode][i]) : nullptr;
      const OutputCheck check{def_.tolerance, in.scale,    !reads_initial(c, int(i)), in.subnormals == Subnormals::flush,
                              g,              got.data(),     ref64[i],                 other,
                              in.keep_bound ? &(*in.keep_bound)[i] : nullptr};
      CompareStats s = check.run();
      for (BadElement& e : s.first_bad) e.tensor = int(i);
      accumulate(total, s, 0);
      if (in.keep_ref) (*in.keep_ref)[i] = ref64[i];
    }
    return total;
  }

  Case resize(const Case& c, std::span<const int64_t> sizes, bool keep_layout) const override {
    return custom::resize(def_, c, sizes, keep_layout);
  }
  std::vector<Case> simplifications(const Case& c) const override {
    std::vector<Case> out;
    const auto sizes = sizes_of(c);
    const auto scalars = scalars_of(c);
    const auto layouts = layouts_of(c);
    auto with = [&](const std::vector<LayoutParts>& l, const std::vector<double>& s) {
      if (auto x = make_case(def_, sizes, l, s, c.recipe, c.seed, c.origin, &c)) out.push_back(std::move(*x));
    };
    // Layouts: all plain, then one tensor at a time.
    with(std::vector<LayoutParts>(c.tensors.size()), scalars);
    for (size_t t = 0; t < c.tensors.size(); ++t) {
      auto l = layouts;
      l[t] = LayoutParts{};
      with(l, scalars);
    }
    // Scalars: each to its simplest value (1, else 0, else the first listed).
    for (size_t j = 0; j < def_.scalars.size() && j < scalars.size(); ++j) {
      const auto cand = def_.scalars[j].candidates();
      for (double v : cand)
        if (v != scalars[j]) {
          auto s = scalars;
          s[j] = v;
          with(layouts, s);
          break;
        }
    }
    return out;
  }
  Case with_layout(const Case& c, int tensor, bool col_major, int64_t pad, int64_t offset) const override {
    Case x = c;
    lay_out(x.tensors[size_t(tensor)], LayoutParts{col_major && x.tensors[size_t(tensor)].shape.size() >= 2, pad, offset});
    return x;
  }

  Case decode(const uint8_t* data, size_t size, const Spec&, const CodecLimits& lim) const override {
    return custom::decode(def_, data, size, lim);
  }
  std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim) const override {
    return custom::encode(def_, c, lim);
  }
  Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) const override {
    return custom::mutate(def_, c, random, lim);
  }
  std::vector<Case> seed_cases(const Spec& spec) const override {
    std::vector<Case> out;
    for (Case& c : custom::sweep(def_, spec, 1, SweepTarget{BackendKind::host, INFINITY}))
      if (elements(c) <= 4096 && out.size() < 16) out.push_back(std::move(c));
    return out;
  }

  baseline::BaselineResult run_baseline(std::string_view rule, Backend&, Runner&, const Spec&,
                                        const baseline::BaselineOptions&) const override {
    baseline::BaselineResult r;
    r.checker = std::string(rule), r.applicable = false, r.detail = "no published rule for user-defined ops";
    return r;
  }

 private:
  // Every tensor as compact row-major FP64: inputs and the initial values of
  // inout tensors widened exactly from where `device` says they are (on cuda,
  // downloaded first), pure outputs zero.
  std::vector<std::vector<double>> widened(Backend& backend, const Case& c, std::span<const std::byte* const> device) const {
    std::vector<std::vector<double>> data(c.tensors.size());
    for (size_t i = 0; i < c.tensors.size(); ++i) {
      const TensorGeom g = c.geom(int(i));
      const int64_t rows = g.rows(), cols = g.cols();
      data[i].assign(size_t(rows * cols), 0.0);
      const std::byte* p = i < device.size() ? device[i] : nullptr;
      if (!p || rows * cols == 0) continue;
      const int size = dtype_bytes(g.dtype);
      std::vector<std::byte> image;
      if (backend.kind() != BackendKind::host) {
        // Only the tensor's span, from its data start (a view of the buffer
        // that holds it; the cuda backend's buffers may be slices of a larger block).
        image.resize(size_t(g.span()) * size_t(size));
        backend.download(Buffer{const_cast<std::byte*>(p), image.size()}, image.data());
        p = image.data();
      }
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t col = 0; col < cols; ++col)
          data[i][size_t(r * cols + col)] = assay::decode(g.dtype, load_bits(g.dtype, p + g.index(r, col) * size));
    }
    return data;
  }

  Def def_;
  std::shared_ptr<const References> refs_;
};

}  // namespace

ASSAY_REGISTER_OP("custom", [](const Spec& spec) -> std::shared_ptr<const Op> { return std::make_shared<CustomOp>(spec); });

}  // namespace assay::custom
