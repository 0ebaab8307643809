#include "ops/reduce/reduce_problem.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/yaml_input.h"

namespace assay::reduce {

namespace {

constexpr rows::TensorRule kRules[] = {{"x", Role::input, rows::Kind::element}, {"y", Role::output, rows::Kind::row}};

[[noreturn]] void bad(const Case& c, const std::string& why) {
  throw InputError(fmt::format("not a reduce case: {} ({})", why, describe(c)));
}

}  // namespace

std::string_view name(Reduction r) {
  switch (r) {
    case Reduction::sum: return "sum";
    case Reduction::mean: return "mean";
    case Reduction::max: return "max";
    case Reduction::min: return "min";
    case Reduction::argmax: return "argmax";
    default: return "argmin";
  }
}

Settings read_settings(const Spec& spec) {
  Settings s;
  if (!spec.yaml || !spec.yaml.IsMap()) return s;  // a Spec built in code: the defaults
  yaml_input::Fields top(spec.file.string(), spec.yaml);
  const yaml_input::Field& r = top.required("reduce");
  const std::string op = top.choice(r, {"sum", "mean", "max", "min", "argmax", "argmin"});
  for (Reduction x : {Reduction::sum, Reduction::mean, Reduction::max, Reduction::min, Reduction::argmax,
                      Reduction::argmin})
    if (name(x) == op) s.op = x;
  if (auto* f = top.optional("nan")) {
    if (!is_extreme(s.op))
      top.fail(*f, fmt::format("applies to max, min, argmax and argmin only ({} propagates NaN by IEEE arithmetic)", op));
    s.propagate = top.choice(*f, {"ieee", "propagate"}) == "propagate";
  }
  if (auto* f = top.optional("ties")) {
    if (!is_arg(s.op)) top.fail(*f, fmt::format("applies to argmax and argmin only, not {}", op));
    s.ties_any = top.choice(*f, {"lowest", "any"}) == "any";
  }
  if (spec.compute == Compute::tf32) {
    const std::string why = "tf32 is a matrix-multiply input format; reduce has no products to round (use f32, f16, bf16 or f64)";
    if (auto* f = top.optional("compute")) top.fail(*f, why);
    top.fail_at(top.line(), "compute", why);
  }
  // dtypes: x a float type; y i64 for the arg-reductions, a float type otherwise.
  const auto [x, y] = spec_dtypes(spec, s);
  auto fail_dtype = [&](const char* t, const std::string& why) {
    int line = top.line();
    if (auto* d = top.optional("dtypes")) line = d->line;
    top.fail_at(line, std::string("dtypes.") + t, why);
  };
  if (is_integer(x)) fail_dtype("x", "x must be a float type (f32, f16, bf16 or f64)");
  if (is_arg(s.op) && y != DType::i64)
    fail_dtype("y", fmt::format("{} writes indices: y must be i64", op));
  if (!is_arg(s.op) && is_integer(y))
    fail_dtype("y", fmt::format("{} writes values: y must be a float type (f32, f16, bf16 or f64)", op));
  return s;
}

std::pair<DType, DType> spec_dtypes(const Spec& spec, const Settings& s) {
  const DType x = spec.dtype_or("x", DType::f32);
  return {x, spec.dtype_or("y", is_arg(s.op) ? DType::i64 : x)};
}

Case make_case(const Parts& p) {
  Case c;
  c.op = "reduce";
  c.sizes = rows::sizes_of(p.shape);
  c.tensors.push_back(rows::element_tensor("x", Role::input, p.x_type, p.shape, p.x));
  c.tensors.back().keep = p.keep;
  c.tensors.push_back(rows::row_tensor("y", Role::output, p.y_type, p.shape, p.y));
  c.recipe = p.recipe, c.seed = p.seed, c.origin = p.origin;
  return c;
}

Parts parts_of(const Case& c) {
  rows::validate_tensors(c, kRules, {});
  Parts p;
  p.shape = rows::shape_of(c);
  p.x_type = c.tensors[X].dtype, p.y_type = c.tensors[Y].dtype;
  p.x = rows::layout_of(c.tensors[X], p.shape, rows::Kind::element);
  p.y = rows::layout_of(c.tensors[Y], p.shape, rows::Kind::row);
  p.recipe = c.recipe, p.seed = c.seed, p.keep = c.tensors[X].keep, p.origin = c.origin;
  return p;
}

void validate_case(const Case& c, const Settings& s) {
  if (c.op != "reduce") bad(c, "its op must be reduce");
  rows::validate_tensors(c, kRules, {});
  const rows::Shape sh = rows::shape_of(c);
  const DType x = c.tensors[X].dtype, y = c.tensors[Y].dtype;
  if (is_integer(x)) bad(c, "x must be a float type");
  if (is_arg(s.op) && y != DType::i64) bad(c, fmt::format("{} writes indices: y must be i64", name(s.op)));
  if (!is_arg(s.op) && is_integer(y)) bad(c, fmt::format("{} writes values: y must be a float type", name(s.op)));
  if (is_extreme(s.op) && sh.n == 0 && sh.total_rows() > 0)
    bad(c, fmt::format("{} of an empty row (n = 0) has no value (docs/ops/reduce.md)", name(s.op)));
}

Parts plain_parts(const Spec& spec, const Settings& s, rows::Shape shape, std::string origin) {
  Parts p;
  p.shape = shape;
  std::tie(p.x_type, p.y_type) = spec_dtypes(spec, s);
  p.origin = std::move(origin);
  return p;
}

Context::Context(const Case& c) : s_(rows::shape_of(c)), x_(c.geom(X)), y_(c.geom(Y)) {}

std::optional<double> Context::variable(std::string_view name) const { return rows::variable(s_, name); }
std::optional<TensorGeom> Context::tensor(std::string_view name) const {
  if (name == "x") return x_;
  if (name == "y") return y_;
  return std::nullopt;
}

std::optional<double> Names::variable(std::string_view n) const {
  if (rows::is_size_name(n)) return 0.0;
  return std::nullopt;
}
std::optional<TensorGeom> Names::tensor(std::string_view n) const {
  if (n == "x" || n == "y") return TensorGeom{};
  return std::nullopt;
}

}  // namespace assay::reduce
