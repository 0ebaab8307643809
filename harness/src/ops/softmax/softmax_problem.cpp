#include "ops/softmax/softmax_problem.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/yaml_input.h"

namespace assay::softmax {

std::string_view op_name(bool log) { return log ? "log_softmax" : "softmax"; }

Settings read_settings(const Spec& spec, bool log) {
  Settings s;
  s.log = log;
  if (!spec.yaml || !spec.yaml.IsMap()) return s;  // a Spec built in code: the defaults
  yaml_input::Fields top(spec.file.string(), spec.yaml);
  if (auto* f = top.optional("math")) {
    const std::string m = top.choice(*f, {"ieee", "cuda", "fast"});
    s.math = m == "cuda" ? Math::cuda : m == "fast" ? Math::fast : Math::ieee;
  }
  if (auto* f = top.optional("empty_rows")) s.empty_zero = top.choice(*f, {"nan", "zero"}) == "zero";
  if (spec.compute == Compute::tf32) {
    const yaml_input::Field* f = top.optional("compute");
    const std::string why = fmt::format(
        "tf32 is a matrix-multiply input format; {} has no products to round (use f32, f16, bf16 or f64)", op_name(log));
    if (f) top.fail(*f, why);
    top.fail_at(top.line(), "compute", why);
  }
  return s;
}

Layout layout_of(const Case& c, int tensor) {
  return rows::layout_of(c.tensors[size_t(tensor)], shape_of(c), rows::Kind::element);
}

Case make_case(const Parts& p) {
  Case c;
  c.op = std::string(op_name(p.log));
  c.sizes = rows::sizes_of(p.shape);
  c.tensors.push_back(rows::element_tensor("x", Role::input, p.x_type, p.shape, p.x));
  c.tensors.back().keep = p.keep;
  c.tensors.push_back(rows::element_tensor("y", Role::output, p.y_type, p.shape, p.y));
  c.recipe = p.recipe, c.seed = p.seed, c.origin = p.origin;
  return c;
}

Parts parts_of(const Case& c) {
  validate_case(c);
  Parts p;
  p.log = c.op == "log_softmax";
  p.shape = shape_of(c);
  p.x_type = c.tensors[X].dtype, p.y_type = c.tensors[Y].dtype;
  p.x = layout_of(c, X), p.y = layout_of(c, Y);
  p.recipe = c.recipe, p.seed = c.seed, p.keep = c.tensors[X].keep, p.origin = c.origin;
  return p;
}

void validate_case(const Case& c) {
  if (c.op != "softmax" && c.op != "log_softmax")
    throw InputError(fmt::format("not a {} case: its op must be softmax or log_softmax ({})", c.op, describe(c)));
  static constexpr rows::TensorRule kTensors[] = {{"x", Role::input, rows::Kind::element},
                                                  {"y", Role::output, rows::Kind::element}};
  rows::validate_tensors(c, kTensors, {});
}

std::pair<DType, DType> spec_dtypes(const Spec& spec) {
  return {spec.dtype_or("x", DType::f32), spec.dtype_or("y", DType::f32)};
}

Parts plain_parts(const Spec& spec, bool log, Shape s, std::string origin) {
  Parts p;
  p.log = log, p.shape = s;
  std::tie(p.x_type, p.y_type) = spec_dtypes(spec);
  p.origin = std::move(origin);
  return p;
}

Context::Context(const Case& c) : s_(shape_of(c)), x_(c.geom(X)), y_(c.geom(Y)) {}

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

}  // namespace assay::softmax
