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

namespace {

[[noreturn]] void bad(const Case& c, const std::string& why) {
  throw InputError(fmt::format("not a {} case: {} ({})", c.op, why, describe(c)));
}

// The inner matrix's span in elements (at least one row and column).
int64_t inner_span(const Shape& s, const Layout& l) {
  const int64_t r = std::max<int64_t>(s.rows, 1), n = std::max<int64_t>(s.n, 1);
  return l.col_major ? n * (r + l.pad) : r * (n + l.pad);
}

}  // namespace

Shape shape_of(const Case& c) {
  Shape s;
  if (c.sizes.size() == 2 && c.sizes[0].name == "rows" && c.sizes[1].name == "n") {
    s.rows = c.sizes[0].value, s.n = c.sizes[1].value;
  } else if (c.sizes.size() == 3 && c.sizes[0].name == "b" && c.sizes[1].name == "rows" && c.sizes[2].name == "n") {
    s.batched = true, s.b = c.sizes[0].value, s.rows = c.sizes[1].value, s.n = c.sizes[2].value;
  } else {
    bad(c, "its sizes must be rows, n or b, rows, n");
  }
  if (s.b < 0 || s.rows < 0 || s.n < 0) bad(c, "sizes must not be negative");
  return s;
}

CaseTensor make_tensor(const char* name, Role role, DType t, const Shape& s, const Layout& l) {
  CaseTensor x;
  x.name = name, x.role = role, x.dtype = t, x.offset = l.offset;
  const int64_t r = std::max<int64_t>(s.rows, 1), n = std::max<int64_t>(s.n, 1);
  const int64_t rs = l.col_major ? 1 : n + l.pad, cs = l.col_major ? r + l.pad : 1;
  if (s.batched) {
    x.shape = {s.b, s.rows, s.n};
    x.strides = {inner_span(s, l) + l.batch_gap, rs, cs};
  } else {
    x.shape = {s.rows, s.n};
    x.strides = {rs, cs};
  }
  return x;
}

Layout layout_of(const Case& c, int tensor) {
  const CaseTensor& t = c.tensors[size_t(tensor)];
  const Shape s = shape_of(c);
  Layout l;
  const size_t d = t.strides.size();
  if (d < 2) return l;
  const int64_t rs = t.strides[d - 2], cs = t.strides[d - 1];
  l.col_major = cs != 1;
  l.pad = std::max<int64_t>(0, l.col_major ? cs - std::max<int64_t>(s.rows, 1) : rs - std::max<int64_t>(s.n, 1));
  l.offset = t.offset;
  if (d == 3) l.batch_gap = std::max<int64_t>(0, t.strides[0] - inner_span(s, l));
  return l;
}

Case make_case(const Parts& p) {
  Case c;
  c.op = std::string(op_name(p.log));
  if (p.shape.batched) c.sizes = {{"b", p.shape.b}, {"rows", p.shape.rows}, {"n", p.shape.n}};
  else c.sizes = {{"rows", p.shape.rows}, {"n", p.shape.n}};
  c.tensors.push_back(make_tensor("x", Role::input, p.x_type, p.shape, p.x));
  c.tensors.back().keep = p.keep;
  c.tensors.push_back(make_tensor("y", Role::output, p.y_type, p.shape, p.y));
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
  if (c.op != "softmax" && c.op != "log_softmax") bad(c, "its op must be softmax or log_softmax");
  const Shape s = shape_of(c);
  if (c.tensors.size() != 2) bad(c, "it must have tensors x, y");
  if (!c.scalars.empty()) bad(c, "it takes no scalars");
  const char* names[2] = {"x", "y"};
  for (int i = 0; i < 2; ++i) {
    const CaseTensor& t = c.tensors[size_t(i)];
    if (t.name != names[i]) bad(c, fmt::format("tensor {} must be named {}", i, names[i]));
    if (t.role != (i == X ? Role::input : Role::output))
      bad(c, fmt::format("{} must be an {}", t.name, i == X ? "input" : "output"));
    const std::vector<int64_t> want =
        s.batched ? std::vector<int64_t>{s.b, s.rows, s.n} : std::vector<int64_t>{s.rows, s.n};
    if (t.shape != want)
      bad(c, fmt::format("{} must have shape [{}]", t.name, fmt::join(want, ", ")));
    if (t.strides.size() != t.shape.size()) bad(c, fmt::format("{} needs one stride per dimension", t.name));
  }
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

std::optional<double> Context::variable(std::string_view name) const {
  if (name == "b") return double(s_.batched ? s_.b : 1);
  if (name == "rows") return double(s_.rows);
  if (name == "n") return double(s_.n);
  return std::nullopt;
}
std::optional<TensorGeom> Context::tensor(std::string_view name) const {
  if (name == "x") return x_;
  if (name == "y") return y_;
  return std::nullopt;
}

std::optional<double> Names::variable(std::string_view n) const {
  if (n == "b" || n == "rows" || n == "n") return 0.0;
  return std::nullopt;
}
std::optional<TensorGeom> Names::tensor(std::string_view n) const {
  if (n == "x" || n == "y") return TensorGeom{};
  return std::nullopt;
}

}  // namespace assay::softmax
