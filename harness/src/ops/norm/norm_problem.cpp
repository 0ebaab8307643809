#include "ops/norm/norm_problem.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/yaml_input.h"
#include "ops/op.h"

namespace assay::norm {

namespace {
constexpr const char* kNames[kSlots] = {"x", "weight", "bias", "y", "mean", "rstd"};

[[noreturn]] void bad(const Case& c, const std::string& why) {
  throw InputError(fmt::format("not a {} case: {} ({})", c.op, why, describe(c)));
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}
}  // namespace

const char* slot_name(int slot) { return kNames[slot]; }
rows::Kind slot_kind(int slot) {
  if (slot == X || slot == Y) return rows::Kind::element;
  if (slot == W || slot == B) return rows::Kind::column;
  return rows::Kind::row;
}
bool slot_is_input(int slot) { return slot == X || slot == W || slot == B; }
std::vector<int> slots(bool rms) { return rms ? std::vector<int>{X, W, Y} : std::vector<int>{X, W, B, Y, MEAN, RSTD}; }
int tensor_index(bool rms, int slot) {
  if (!rms) return slot;
  return slot == X ? 0 : slot == W ? 1 : slot == Y ? 2 : -1;
}

std::string_view op_name(bool rms) { return rms ? "rmsnorm" : "layernorm"; }

void check_spec(const Spec& spec, bool rms) {
  if (!spec.yaml || !spec.yaml.IsMap()) return;  // a Spec built in code
  if (rms) check_spec_keys(spec, {"math"}, {});
  else check_spec_keys(spec, {"math", "writes"}, {});
  // dtypes: x, weight, (bias,) y required; layernorm's mean and rstd optional (f32).
  yaml_input::Fields top(spec.file.string(), spec.yaml);
  yaml_input::Fields d = top.nested(top.required("dtypes"));
  const std::vector<int> mine = slots(rms);
  for (const auto& f : d.all()) {
    const std::string key = f.key.substr(std::string("dtypes.").size());
    const bool known = std::any_of(mine.begin(), mine.end(), [&](int s) { return same_name(kNames[s], key); });
    if (!known) {
      std::vector<std::string> names;
      for (int s : mine) names.emplace_back(kNames[s]);
      d.fail(f, fmt::format("no tensor of op '{}' is named '{}' (its tensors: {})", spec.op, key, fmt::join(names, ", ")));
    }
  }
  for (int s : mine)
    if ((s != MEAN && s != RSTD) && !spec.dtype(kNames[s]))
      d.fail_at(d.line(), std::string("dtypes.") + kNames[s], "missing (required)");
}

Settings read_settings(const Spec& spec, bool rms) {
  Settings s;
  s.rms = rms;
  if (spec.compute != Compute::f32 && spec.compute != Compute::f64) {
    const std::string why = fmt::format(
        "{} computes in f32 or f64: a sum of n terms in f16 or bf16 overflows or stagnates past a few thousand "
        "terms (no bound describes it), and tf32 is a matrix-multiply input format; f16/bf16 storage is a dtypes "
        "matter",
        op_name(rms));
    if (spec.yaml && spec.yaml.IsMap()) {
      yaml_input::Fields top(spec.file.string(), spec.yaml);
      if (const yaml_input::Field* f = top.optional("compute")) top.fail(*f, why);
      top.fail_at(top.line(), "compute", why);
    }
    throw InputError(why);
  }
  if (!spec.yaml || !spec.yaml.IsMap()) return s;
  yaml_input::Fields top(spec.file.string(), spec.yaml);
  if (auto* f = top.optional("math")) {
    const std::string m = top.choice(*f, {"ieee", "cuda", "fast"});
    s.math = m == "cuda" ? Math::cuda : m == "fast" ? Math::fast : Math::ieee;
  }
  if (auto* f = top.optional("writes")) {
    std::set<std::string> names;
    for (const auto& [name, line] : top.strings(*f, true)) {
      if (name != "y" && name != "mean" && name != "rstd")
        top.fail(*f, fmt::format("'{}' is not an output of layernorm (its outputs: y, mean, rstd)", name));
      if (!names.insert(name).second) top.fail(*f, fmt::format("'{}' is named twice", name));
    }
    if (names == std::set<std::string>{"y"}) s.writes_stats = false;
    else if (names != std::set<std::string>{"y", "mean", "rstd"})
      top.fail(*f, "must be [y] (the statistics are not produced) or [y, mean, rstd] (the default)");
  }
  return s;
}

bool is_rms(const Case& c) { return c.op == "rmsnorm"; }

Case make_case(const Parts& p) {
  Case c;
  c.op = std::string(op_name(p.rms));
  c.sizes = rows::sizes_of(p.shape);
  for (int s : slots(p.rms)) {
    const Role role = slot_is_input(s) ? Role::input : Role::output;
    switch (slot_kind(s)) {
      case rows::Kind::element: c.tensors.push_back(rows::element_tensor(kNames[s], role, p.type[s], p.shape, p.layout[s])); break;
      case rows::Kind::column: c.tensors.push_back(rows::column_tensor(kNames[s], role, p.type[s], p.shape, p.layout[s])); break;
      case rows::Kind::row: c.tensors.push_back(rows::row_tensor(kNames[s], role, p.type[s], p.shape, p.layout[s])); break;
    }
    if (slot_is_input(s)) c.tensors.back().keep = p.keep[s];
  }
  c.scalars = {{"eps", p.eps}};
  c.recipe = p.recipe, c.seed = p.seed, c.origin = p.origin;
  return c;
}

Parts parts_of(const Case& c) {
  validate_case(c);
  Parts p;
  p.rms = is_rms(c);
  p.shape = rows::shape_of(c);
  for (int s : slots(p.rms)) {
    const CaseTensor& t = c.tensors[size_t(tensor_index(p.rms, s))];
    p.type[s] = t.dtype;
    p.layout[s] = rows::layout_of(t, p.shape, slot_kind(s));
    p.keep[s] = t.keep;
  }
  p.eps = c.scalars[0].value;
  p.recipe = c.recipe, p.seed = c.seed, p.origin = c.origin;
  return p;
}

Parts plain_parts(const Spec& spec, bool rms, rows::Shape s, std::string origin) {
  Parts p;
  p.rms = rms, p.shape = s, p.origin = std::move(origin);
  for (int slot : slots(rms)) p.type[slot] = spec.dtype_or(kNames[slot], DType::f32);
  return p;
}

void validate_case(const Case& c) {
  if (c.op != "layernorm" && c.op != "rmsnorm") bad(c, "its op must be layernorm or rmsnorm");
  const bool rms = is_rms(c);
  std::vector<rows::TensorRule> rules;
  for (int s : slots(rms)) rules.push_back({kNames[s], slot_is_input(s) ? Role::input : Role::output, slot_kind(s)});
  const char* scalars[] = {"eps"};
  rows::validate_tensors(c, rules, scalars);
  const double eps = c.scalars[0].value;
  if (!std::isfinite(eps) || eps < 0) bad(c, fmt::format("eps must be finite and >= 0, not {}", eps));
  const rows::Shape s = rows::shape_of(c);
  // Rows and columns index with 32-bit halves in the value recipes.
  if (s.rows > (int64_t(1) << 31) || s.n > (int64_t(1) << 31) || s.b > (int64_t(1) << 31))
    bad(c, "a size past 2^31");
}

Context::Context(const Case& c) : s_(rows::shape_of(c)), eps_(c.scalars.empty() ? 0.0 : c.scalars[0].value) {
  for (size_t i = 0; i < c.tensors.size(); ++i) t_.emplace_back(c.tensors[i].name, c.geom(int(i)));
}
std::optional<double> Context::variable(std::string_view name) const {
  if (auto v = rows::variable(s_, name)) return v;
  if (name == "eps") return eps_;
  return std::nullopt;
}
std::optional<TensorGeom> Context::tensor(std::string_view name) const {
  for (const auto& [n, g] : t_)
    if (n == name) return g;
  return std::nullopt;
}

std::optional<double> Names::variable(std::string_view n) const {
  if (rows::is_size_name(n) || n == "eps") return 0.0;
  return std::nullopt;
}
std::optional<TensorGeom> Names::tensor(std::string_view n) const {
  for (int s : slots(rms))
    if (n == kNames[s]) return TensorGeom{};
  return std::nullopt;
}

}  // namespace assay::norm
