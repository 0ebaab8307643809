#include "ops/unary/unary_problem.h"

#include <array>

#include <fmt/format.h>

#include "core/error.h"
#include "core/yaml_input.h"

namespace assay::unary {
namespace {

constexpr std::array<std::pair<std::string_view, Fn>, 7> kFns{{{"relu", Fn::relu},
                                                               {"gelu", Fn::gelu},
                                                               {"gelu_tanh", Fn::gelu_tanh},
                                                               {"silu", Fn::silu},
                                                               {"sigmoid", Fn::sigmoid},
                                                               {"exp", Fn::exp},
                                                               {"tanh", Fn::tanh}}};

constexpr rows::TensorRule kRules[] = {{"x", Role::input, rows::Kind::element},
                                       {"y", Role::output, rows::Kind::element}};

}  // namespace

std::string_view fn_name(Fn f) {
  for (auto& [n, v] : kFns)
    if (v == f) return n;
  return "?";
}

Settings read_settings(const Spec& spec) {
  Settings s;
  if (!spec.yaml || !spec.yaml.IsMap()) return s;  // a Spec built in code: the defaults
  yaml_input::Fields top(spec.file.string(), spec.yaml);
  const yaml_input::Field& f = top.required("fn");
  const std::string fn = top.choice(f, {"relu", "gelu", "gelu_tanh", "silu", "sigmoid", "exp", "tanh"});
  for (auto& [n, v] : kFns)
    if (n == fn) s.fn = v;
  if (auto* m = top.optional("math")) {
    const std::string v = top.choice(*m, {"ieee", "cuda", "fast"});
    s.math = v == "cuda" ? Math::cuda : v == "fast" ? Math::fast : Math::ieee;
  }
  if (spec.compute == Compute::tf32) {
    const std::string why =
        "tf32 is a matrix-multiply input format; unary has no products to round (use f32, f16, bf16 or f64)";
    if (const yaml_input::Field* c = top.optional("compute")) top.fail(*c, why);
    top.fail_at(top.line(), "compute", why);
  }
  return s;
}

Case make_case(const Parts& p) {
  Case c;
  c.op = std::string(kOpName);
  c.sizes = rows::sizes_of(p.shape);
  c.tensors.push_back(rows::element_tensor("x", Role::input, p.x_type, p.shape, p.x));
  c.tensors.back().keep = p.keep;
  c.tensors.push_back(rows::element_tensor("y", Role::output, p.y_type, p.shape, p.y));
  c.recipe = p.recipe, c.seed = p.seed, c.origin = p.origin;
  return c;
}

void validate_case(const Case& c) {
  if (c.op != kOpName)
    throw InputError(fmt::format("not a unary case: its op must be unary ({})", describe(c)));
  rows::validate_tensors(c, kRules, {});
}

Parts parts_of(const Case& c) {
  validate_case(c);
  Parts p;
  p.shape = rows::shape_of(c);
  p.x_type = c.tensors[X].dtype, p.y_type = c.tensors[Y].dtype;
  p.x = rows::layout_of(c.tensors[X], p.shape, rows::Kind::element);
  p.y = rows::layout_of(c.tensors[Y], p.shape, rows::Kind::element);
  p.recipe = c.recipe, p.seed = c.seed, p.keep = c.tensors[X].keep, p.origin = c.origin;
  return p;
}

Parts plain_parts(const Spec& spec, Shape s, std::string origin) {
  Parts p;
  p.shape = s;
  p.x_type = spec.dtype_or("x", DType::f32), p.y_type = spec.dtype_or("y", DType::f32);
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
  return rows::is_size_name(n) ? std::optional<double>(0.0) : std::nullopt;
}
std::optional<TensorGeom> Names::tensor(std::string_view n) const {
  if (n == "x" || n == "y") return TensorGeom{};
  return std::nullopt;
}

}  // namespace assay::unary
