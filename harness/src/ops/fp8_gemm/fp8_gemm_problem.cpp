#include "ops/fp8_gemm/fp8_gemm_problem.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/yaml_input.h"

namespace assay::fp8_gemm {
namespace {

constexpr const char* kTensorNames[] = {"a", "a_scale", "b", "b_scale", "d"};

[[noreturn]] void bad(const Case& c, const std::string& why) {
  throw InputError(fmt::format("not an fp8_gemm case: {} ({})", why, describe(c)));
}

// A [rows, cols] tensor with the layout's strides.
CaseTensor tensor_of(const char* name, Role role, DType t, int64_t rows, int64_t cols, const Layout& l) {
  return rows::element_tensor(name, role, t, rows::Shape{false, 1, rows, cols}, l);
}
Layout layout_of(const CaseTensor& t, int64_t rows, int64_t cols) {
  return rows::layout_of(t, rows::Shape{false, 1, rows, cols}, rows::Kind::element);
}

std::pair<int64_t, int64_t> shape_at(const Sizes& z, int i) {
  switch (i) {
    case A: return {z.m, z.k};
    case AS: return {z.m, blocks(z.k)};
    case B: return {z.n, z.k};
    case BS: return {blocks(z.n), blocks(z.k)};
    default: return {z.m, z.n};
  }
}

bool allowed(int i, DType t) {
  if (i == A || i == B) return is_fp8(t);
  if (i == AS || i == BS) return t == DType::f32;
  return t == DType::bf16 || t == DType::f32;
}
const char* allowed_text(int i) {
  return i == A || i == B ? "must be e4m3 or e5m2" : i == D ? "must be bf16 or f32" : "must be f32";
}

}  // namespace

Settings read_settings(const Spec& spec) {
  Settings s;
  if (!spec.yaml || !spec.yaml.IsMap()) return s;  // a Spec built in code: the defaults
  yaml_input::Fields top(spec.file.string(), spec.yaml);
  if (auto* f = top.optional("accumulate"))
    s.accumulate = top.choice(*f, {"f32", "fp8_tensor_core"}) == "f32" ? Accumulate::f32 : Accumulate::fp8_tensor_core;
  if (auto* f = top.optional("promote_every")) {
    if (s.accumulate != Accumulate::fp8_tensor_core)
      top.fail(*f, "applies to accumulate: fp8_tensor_core only (an f32 accumulator is never promoted)");
    s.promote_every = std::stoll(top.choice(*f, {"32", "64", "128"}));
  }
  if (spec.compute != Compute::f32) {
    const std::string why = "fp8_gemm's products are exact in f32 and `accumulate` says how they are summed: "
                            "compute must be f32";
    if (auto* f = top.optional("compute")) top.fail(*f, why);
    top.fail_at(top.line(), "compute", why);
  }
  yaml_input::Fields d = top.nested(top.required("dtypes"));
  for (int i = 0; i < 5; ++i) {
    const std::optional<DType> t = spec.dtype(kTensorNames[i]);
    if (!t) d.fail_at(d.line(), std::string("dtypes.") + kTensorNames[i], "missing (required)");
    if (!allowed(i, *t)) {
      int line = d.line();
      for (const auto& f : d.all())
        if (f.key == std::string("dtypes.") + kTensorNames[i]) line = f.line;
      d.fail_at(line, std::string("dtypes.") + kTensorNames[i], fmt::format("{} {}", kTensorNames[i], allowed_text(i)));
    }
  }
  return s;
}

Layout& layout_at(Parts& p, int t) {
  Layout* ls[] = {&p.a, &p.a_scale, &p.b, &p.b_scale, &p.d};
  return *ls[t];
}
const Layout& layout_at(const Parts& p, int t) { return layout_at(const_cast<Parts&>(p), t); }

Case make_case(const Parts& p) {
  const Sizes& z = p.sizes;
  Case c;
  c.op = "fp8_gemm";
  c.sizes = {{"m", z.m}, {"n", z.n}, {"k", z.k}};
  const DType types[] = {p.a_type, DType::f32, p.b_type, DType::f32, p.d_type};
  for (int i = 0; i < 5; ++i) {
    const auto [rows, cols] = shape_at(z, i);
    c.tensors.push_back(tensor_of(kTensorNames[i], i == D ? Role::output : Role::input, types[i], rows, cols,
                                  layout_at(p, i)));
  }
  for (int i = 0; i < 4; ++i) c.tensors[size_t(i)].keep = p.keep[i];
  c.recipe = p.recipe, c.seed = p.seed, c.origin = p.origin;
  return c;
}

Sizes sizes_of(const Case& c) {
  if (c.sizes.size() != 3 || c.sizes[0].name != "m" || c.sizes[1].name != "n" || c.sizes[2].name != "k")
    bad(c, "its sizes must be m, n, k");
  return Sizes{c.sizes[0].value, c.sizes[1].value, c.sizes[2].value};
}

Parts parts_of(const Case& c) {
  const Sizes z = sizes_of(c);
  if (c.tensors.size() != 5) bad(c, "it must have 5 tensors (a, a_scale, b, b_scale, d)");
  for (int i = 0; i < 5; ++i)
    if (c.tensors[size_t(i)].shape.size() != 2 || c.tensors[size_t(i)].strides.size() != 2)
      bad(c, fmt::format("{} must be 2-D with one stride per dimension", kTensorNames[i]));
  Parts p;
  p.sizes = z;
  p.a_type = c.tensors[A].dtype, p.b_type = c.tensors[B].dtype, p.d_type = c.tensors[D].dtype;
  for (int i = 0; i < 5; ++i) {
    const auto [rows, cols] = shape_at(z, i);
    layout_at(p, i) = layout_of(c.tensors[size_t(i)], rows, cols);
  }
  p.recipe = c.recipe, p.seed = c.seed, p.origin = c.origin;
  for (int i = 0; i < 4; ++i) p.keep[i] = c.tensors[size_t(i)].keep;
  return p;
}

void validate_case(const Case& c) {
  if (c.op != "fp8_gemm") bad(c, "its op must be fp8_gemm");
  const Sizes z = sizes_of(c);
  if (z.m < 1 || z.n < 1 || z.k < 1) bad(c, "m, n and k must be at least 1");
  if (c.tensors.size() != 5) bad(c, "it must have a, a_scale, b, b_scale, d");
  if (!c.scalars.empty()) bad(c, "it has no scalars");
  for (int i = 0; i < 5; ++i) {
    const CaseTensor& t = c.tensors[size_t(i)];
    const auto [rows, cols] = shape_at(z, i);
    if (t.name != kTensorNames[i] || t.role != (i == D ? Role::output : Role::input))
      bad(c, fmt::format("tensor {} must be {} ({})", i, kTensorNames[i], i == D ? "output" : "input"));
    if (t.shape != std::vector<int64_t>{rows, cols})
      bad(c, fmt::format("{} must have shape [{}, {}]", kTensorNames[i], rows, cols));
    if (t.strides.size() != 2) bad(c, fmt::format("{} needs one stride per dimension", kTensorNames[i]));
    if (!allowed(i, t.dtype)) bad(c, fmt::format("{} {} (it is {})", kTensorNames[i], allowed_text(i), name(t.dtype)));
  }
}

Parts plain_parts(const Spec& spec, Sizes z, std::string origin) {
  Parts p;
  p.sizes = z;
  p.a_type = spec.dtype_or("a", DType::e4m3), p.b_type = spec.dtype_or("b", DType::e4m3);
  p.d_type = spec.dtype_or("d", DType::bf16);
  p.origin = std::move(origin);
  return p;
}

Context::Context(const Case& c) : z_(sizes_of(c)), sizes_and_tensors_(case_context(c)) {}
std::optional<double> Context::variable(std::string_view name) const {
  if (name == "kb") return double(blocks(z_.k));
  if (name == "nb") return double(blocks(z_.n));
  return sizes_and_tensors_->variable(name);
}
std::optional<TensorGeom> Context::tensor(std::string_view name) const { return sizes_and_tensors_->tensor(name); }

std::optional<double> Names::variable(std::string_view n) const {
  for (const char* v : {"m", "n", "k", "kb", "nb"})
    if (n == v) return 0.0;
  return std::nullopt;
}
std::optional<TensorGeom> Names::tensor(std::string_view n) const {
  for (const char* t : kTensorNames)
    if (n == t) return TensorGeom{};
  return std::nullopt;
}

}  // namespace assay::fp8_gemm
