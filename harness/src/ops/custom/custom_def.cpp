#include "ops/custom/custom_def.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/yaml_input.h"
#include "ops/op.h"

namespace assay::custom {
namespace {

namespace fs = std::filesystem;
using yaml_input::Field;
using yaml_input::Fields;
using yaml_input::quote;

constexpr int64_t kMaxSize = int64_t(1) << 31;  // value draws address rows and columns below 2^32

int line_of(const YAML::Node& n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : 1; }

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// The sizes as variables (shape expressions name nothing else).
struct SizeNames final : EvalContext {
  const std::vector<SizeDef>& sizes;
  explicit SizeNames(const std::vector<SizeDef>& s) : sizes(s) {}
  std::optional<double> variable(std::string_view n) const override {
    for (auto& s : sizes)
      if (s.name == n) return 1.0;
    return std::nullopt;
  }
  std::optional<TensorGeom> tensor(std::string_view) const override { return std::nullopt; }
};

struct SizeValues final : EvalContext {
  const std::vector<SizeDef>& sizes;
  std::span<const int64_t> values;
  SizeValues(const std::vector<SizeDef>& s, std::span<const int64_t> v) : sizes(s), values(v) {}
  std::optional<double> variable(std::string_view n) const override {
    for (size_t i = 0; i < sizes.size(); ++i)
      if (sizes[i].name == n) return double(values[i]);
    return std::nullopt;
  }
  std::optional<TensorGeom> tensor(std::string_view) const override { return std::nullopt; }
};

// A list item as a field of its own, for typed reads and FILE:LINE errors.
Field item(const Field& list, size_t i) {
  const YAML::Node n = list.value[i];
  return Field{fmt::format("{}[{}]", list.key, i), n, line_of(n)};
}

void require_sequence(const Fields& f, const Field& field, const char* what) {
  if (!field.value.IsSequence()) f.fail(field, std::string("expected a list (") + what + ")");
}

class Names {
 public:
  // Sizes, tensors and scalars share one namespace (requires name them all).
  void add(const Fields& f, const Field& at, const std::string& name, const char* kind) {
    if (!is_identifier(name)) f.fail(at, quote(name) + " is not a name (letters, digits, _; not starting with a digit)");
    if (!seen_.insert(name).second) f.fail(at, fmt::format("{} name {} is used twice", kind, quote(name)));
  }

 private:
  std::set<std::string> seen_;
};

void read_sizes(const Fields& top, Def& d, Names& names) {
  const Field& f = top.required("sizes");
  if (!f.value.IsMap()) top.fail(f, "expected a mapping of size names to [min, max]");
  Fields s = top.nested(f);
  for (const Field& e : s.all()) {
    SizeDef def;
    def.name = e.key.substr(std::string("sizes.").size());
    names.add(s, e, def.name, "size");
    if (!e.value.IsSequence() || e.value.size() != 2) s.fail(e, "expected [min, max], two integers");
    def.min = s.integer(item(e, 0), 0, kMaxSize);
    def.max = s.integer(item(e, 1), 0, kMaxSize);
    if (def.min > def.max) s.fail(e, fmt::format("min {} is above max {}", def.min, def.max));
    d.sizes.push_back(std::move(def));
  }
}

void read_tensors(const Fields& top, const Spec& spec, Def& d, Names& names) {
  const Field& f = top.required("tensors");
  require_sequence(top, f, "of {name, role, dtype, shape}");
  if (f.value.size() == 0) top.fail(f, "no tensors (an op needs at least one output)");
  const SizeNames sizes(d.sizes);
  std::string first_output;
  for (size_t i = 0; i < f.value.size(); ++i) {
    const Field e = item(f, i);
    if (!e.value.IsMap()) top.fail(e, "expected a mapping {name, role, dtype, shape}");
    Fields t(top.file(), e.value, e.key + ".");
    t.only({"name", "role", "dtype", "shape"});
    TensorDef def;
    const Field& name = t.required("name");
    def.name = t.string(name);
    names.add(t, name, def.name, "tensor");
    const Field& role = t.required("role");
    def.role = *parse_role(t.choice(role, {"input", "output", "inout"}));
    def.dtype = *parse_dtype(t.choice(t.required("dtype"), {"f64", "f32", "f16", "bf16"}));
    if (auto over = spec.dtype(def.name)) def.dtype = *over;
    const Field& shape = t.required("shape");
    require_sequence(t, shape, "one expression over the sizes per dimension; [] for a scalar tensor");
    if (shape.value.size() > size_t(TensorGeom::kMaxDims))
      t.fail(shape, fmt::format("{} dimensions; at most {}", shape.value.size(), TensorGeom::kMaxDims));
    for (size_t j = 0; j < shape.value.size(); ++j) {
      const Field x = item(shape, j);
      if (!x.value.IsScalar() || x.value.Scalar().empty()) t.fail(x, "expected an expression over the sizes");
      try {
        Requirement r = Requirement::parse(x.value.Scalar());
        r.check_names(sizes);
        def.shape.push_back(std::move(r));
      } catch (const RequiresSyntaxError& err) {
        std::string known;
        for (auto& s : d.sizes) known += (known.empty() ? "" : ", ") + s.name;
        t.fail(x, fmt::format("{} in {} (the sizes: {})", err.what(), quote(x.value.Scalar()),
                              known.empty() ? "none" : known));
      }
    }
    if (def.role == Role::input && !first_output.empty())
      t.fail(role, fmt::format("input {} comes after output {}: tensors are listed in ABI order, the inputs first, "
                               "then the outputs (output or inout)",
                               quote(def.name), quote(first_output)));
    if (def.role == Role::input) ++d.num_inputs;
    else if (first_output.empty()) first_output = def.name;
    d.tensors.push_back(std::move(def));
  }
  if (first_output.empty()) top.fail(f, "no output tensor (role: output or inout)");
}

void read_scalars(const Fields& top, Def& d, Names& names) {
  const Field* f = top.optional("scalars");
  if (!f) return;
  require_sequence(top, *f, "of {name, range: [lo, hi]} or {name, values: [...]}");
  for (size_t i = 0; i < f->value.size(); ++i) {
    const Field e = item(*f, i);
    if (!e.value.IsMap()) top.fail(e, "expected a mapping {name, range: [lo, hi]} or {name, values: [...]}");
    Fields s(top.file(), e.value, e.key + ".");
    s.only({"name", "range", "values"});
    ScalarDef def;
    const Field& name = s.required("name");
    def.name = s.string(name);
    names.add(s, name, def.name, "scalar");
    const Field *range = s.optional("range"), *values = s.optional("values");
    if (bool(range) == bool(values)) s.fail_at(e.line, e.key, "give exactly one of range: [lo, hi] and values: [...]");
    if (range) {
      if (!range->value.IsSequence() || range->value.size() != 2) s.fail(*range, "expected [lo, hi], two numbers");
      def.lo = s.real(item(*range, 0)), def.hi = s.real(item(*range, 1));
      if (def.lo > def.hi) s.fail(*range, fmt::format("lo {} is above hi {}", def.lo, def.hi));
    } else {
      def.listed = true;
      if (!values->value.IsSequence() || values->value.size() == 0) s.fail(*values, "expected a non-empty list of numbers");
      for (size_t j = 0; j < values->value.size(); ++j) def.values.push_back(s.real(item(*values, j)));
    }
    d.scalars.push_back(std::move(def));
  }
}

void read_reference(const Fields& top, const Spec& spec, Def& d) {
  const Field& f = top.required("reference");
  const std::string rel = top.string(f);
  std::error_code ec;
  const fs::path dir = fs::absolute(spec.file, ec).parent_path();
  const fs::path p = fs::weakly_canonical(dir / rel, ec);
  if (ec || !fs::is_regular_file(p, ec))
    top.fail(f, fmt::format("reference file {} not found (looked for {})", quote(rel), (dir / rel).string()));
  d.reference = p;
}

void read_tolerance(const Fields& top, Def& d) {
  const Field& f = top.required("tolerance");
  const char* forms = "{ulps: N}, {relative: r, absolute: a} or {vs_same_precision: k, absolute: a}";
  if (!f.value.IsMap()) top.fail(f, std::string("expected one of ") + forms);
  Fields t = top.nested(f);
  t.only({"ulps", "relative", "absolute", "vs_same_precision"});
  const Field *ulps = t.optional("ulps"), *rel = t.optional("relative"), *abs = t.optional("absolute"),
              *same = t.optional("vs_same_precision");
  auto positive = [&](const Field& x) {
    const double v = t.real(x);
    if (!(v > 0)) t.fail(x, fmt::format("must be positive, not {}", v));
    return v;
  };
  ToleranceDef& tol = d.tolerance;
  const int given = int(bool(ulps)) + int(bool(rel)) + int(bool(same));
  if (given != 1 || (ulps && abs) || (!ulps && !abs))
    t.fail_at(f.line, f.key, std::string("must be exactly one of ") + forms);
  if (abs) {
    tol.absolute = t.real(*abs);
    if (!(tol.absolute >= 0)) t.fail(*abs, fmt::format("must not be negative, not {}", tol.absolute));
  }
  if (ulps) tol.form = ToleranceForm::ulps, tol.ulps = positive(*ulps);
  if (rel) tol.form = ToleranceForm::relative, tol.relative = positive(*rel);
  if (same) tol.form = ToleranceForm::same_precision, tol.factor = positive(*same);
}

// The spec's `dtypes:` overrides must name tensors.
void check_dtypes(const Fields& top, const Def& d) {
  const Field* f = top.optional("dtypes");
  if (!f) return;
  Fields dt = top.nested(*f);
  for (const Field& e : dt.all()) {
    const std::string key = e.key.substr(std::string("dtypes.").size());
    auto same = [&](const TensorDef& t) {
      return t.name.size() == key.size() && std::equal(key.begin(), key.end(), t.name.begin(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
             });
    };
    if (std::none_of(d.tensors.begin(), d.tensors.end(), same)) {
      std::string known;
      for (auto& t : d.tensors) known += (known.empty() ? "" : ", ") + t.name;
      dt.fail(e, fmt::format("no tensor of this op is named {} (its tensors: {})", quote(key), known));
    }
  }
}

}  // namespace

std::vector<double> ScalarDef::candidates() const {
  if (listed) return values;
  std::vector<double> out;
  auto add = [&](double v) {
    if (v >= lo && v <= hi && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  };
  add(1), add(lo), add(hi), add(0), add(lo + (hi - lo) / 2);
  return out;
}

int Def::size_index(std::string_view name) const {
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i].name == name) return int(i);
  return -1;
}

bool Def::in_range(std::span<const int64_t> v) const {
  if (v.size() != sizes.size()) return false;
  for (size_t i = 0; i < sizes.size(); ++i)
    if (v[i] < sizes[i].min || v[i] > sizes[i].max) return false;
  return true;
}

std::vector<int64_t> Def::clamped(std::span<const int64_t> v) const {
  std::vector<int64_t> out(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i)
    out[i] = std::clamp(i < v.size() ? v[i] : sizes[i].min, sizes[i].min, sizes[i].max);
  return out;
}

std::optional<std::vector<int64_t>> Def::shape(int t, std::span<const int64_t> v) const {
  const SizeValues ctx(sizes, v);
  std::vector<int64_t> out;
  for (const Requirement& e : tensors[size_t(t)].shape) {
    const double x = e.value(ctx);
    if (!(x >= 0 && x <= double(kMaxSize)) || x != std::floor(x)) return std::nullopt;
    out.push_back(int64_t(x));
  }
  return out;
}

Def parse_def(const Spec& spec) {
  if (!spec.yaml || !spec.yaml.IsMap())
    throw InputError(fmt::format("{}: op 'custom' is declared by its spec (sizes, tensors, reference, tolerance)",
                                 spec.file.string()));
  check_spec_keys(spec, {"sizes", "tensors", "scalars", "reference", "tolerance"}, {});
  const Fields top(spec.file.string(), spec.yaml);
  Def d;
  Names names;
  read_sizes(top, d, names);
  read_tensors(top, spec, d, names);
  read_scalars(top, d, names);
  check_dtypes(top, d);
  read_reference(top, spec, d);
  read_tolerance(top, d);
  return d;
}

void lay_out(CaseTensor& t, const LayoutParts& l) {
  const int nd = int(t.shape.size());
  t.strides.assign(size_t(nd), 1);
  t.offset = l.offset;
  if (nd == 0) return;
  auto ext = [&](int d) { return std::max<int64_t>(t.shape[size_t(d)], 1); };
  if (nd == 1) {
    t.strides[0] = l.pad > 0 ? 1 + (l.pad + ext(0) - 1) / ext(0) : 1;
    return;
  }
  int64_t inner;
  if (l.col_major) {
    t.strides[size_t(nd - 2)] = 1;
    t.strides[size_t(nd - 1)] = ext(nd - 2) + l.pad;
    inner = t.strides[size_t(nd - 1)] * ext(nd - 1);
  } else {
    t.strides[size_t(nd - 1)] = 1;
    t.strides[size_t(nd - 2)] = ext(nd - 1) + l.pad;
    inner = t.strides[size_t(nd - 2)] * ext(nd - 2);
  }
  for (int d = nd - 3; d >= 0; --d) t.strides[size_t(d)] = inner, inner *= ext(d);
}

LayoutParts layout_parts(const CaseTensor& t) {
  LayoutParts l;
  l.offset = t.offset;
  const int nd = int(t.shape.size());
  if (nd == 0 || t.strides.size() != t.shape.size()) return l;
  auto ext = [&](int d) { return std::max<int64_t>(t.shape[size_t(d)], 1); };
  if (nd == 1) {
    l.pad = std::max<int64_t>(0, ext(0) * (t.strides[0] - 1));
    return l;
  }
  const int64_t rs = t.strides[size_t(nd - 2)], cs = t.strides[size_t(nd - 1)];
  l.col_major = rs == 1 && cs != 1;
  l.pad = std::max<int64_t>(0, l.col_major ? cs - ext(nd - 2) : rs - ext(nd - 1));
  return l;
}

std::optional<Case> make_case(const Def& def, std::span<const int64_t> sizes, std::span<const LayoutParts> layouts,
                              std::span<const double> scalars, Recipe recipe, uint64_t seed, std::string origin,
                              const Case* like) {
  Case c;
  c.op = "custom";
  for (size_t i = 0; i < def.sizes.size(); ++i) c.sizes.push_back({def.sizes[i].name, sizes[i]});
  for (size_t i = 0; i < def.tensors.size(); ++i) {
    const TensorDef& td = def.tensors[i];
    auto shape = def.shape(int(i), sizes);
    if (!shape) return std::nullopt;
    CaseTensor t;
    t.name = td.name, t.role = td.role, t.dtype = td.dtype, t.shape = std::move(*shape);
    lay_out(t, i < layouts.size() ? layouts[i] : LayoutParts{});
    if (like && i < like->tensors.size()) t.keep = like->tensors[i].keep, t.dtype = like->tensors[i].dtype;
    c.tensors.push_back(std::move(t));
  }
  for (size_t i = 0; i < def.scalars.size(); ++i)
    c.scalars.push_back({def.scalars[i].name, i < scalars.size() ? scalars[i] : def.scalars[i].candidates().front()});
  c.recipe = recipe, c.seed = seed, c.origin = std::move(origin);
  return c;
}

std::vector<int64_t> sizes_of(const Case& c) {
  std::vector<int64_t> v;
  for (auto& s : c.sizes) v.push_back(s.value);
  return v;
}
std::vector<double> scalars_of(const Case& c) {
  std::vector<double> v;
  for (auto& s : c.scalars) v.push_back(s.value);
  return v;
}
std::vector<LayoutParts> layouts_of(const Case& c) {
  std::vector<LayoutParts> v;
  for (auto& t : c.tensors) v.push_back(layout_parts(t));
  return v;
}

}  // namespace assay::custom
