#include "ops/moe_topk/moe_topk_problem.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/yaml_input.h"

namespace assay::moe_topk {
namespace {

[[noreturn]] void bad(const Case& c, const std::string& why) {
  throw InputError(fmt::format("not a moe_topk case: {} ({})", why, describe(c)));
}

rows::Shape logits_shape(const Sizes& z) { return rows::Shape{false, 1, z.tokens, z.experts}; }
rows::Shape out_shape(const Sizes& z) { return rows::Shape{false, 1, z.tokens, z.topk}; }

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string_view name(Mode m) { return m == Mode::softmax_topk ? "softmax_topk" : "sigmoid_bias_grouped"; }

Settings read_settings(const Spec& spec) {
  Settings s;
  if (!spec.yaml || !spec.yaml.IsMap()) return s;  // a Spec built in code: the defaults
  yaml_input::Fields top(spec.file.string(), spec.yaml);
  yaml_input::Fields r = top.nested(top.required("routing"));
  r.only({"mode", "renormalize", "bias", "n_group", "topk_group", "routed_scaling_factor"});
  s.mode = r.choice(r.required("mode"), {"softmax_topk", "sigmoid_bias_grouped"}) == "softmax_topk"
               ? Mode::softmax_topk
               : Mode::sigmoid_bias_grouped;
  s.bias = s.mode == Mode::sigmoid_bias_grouped;
  if (auto* f = r.optional("renormalize")) s.renormalize = r.boolean(*f);
  if (auto* f = r.optional("bias")) s.bias = r.boolean(*f);
  if (auto* f = r.optional("n_group")) {
    if (s.mode != Mode::sigmoid_bias_grouped) r.fail(*f, "group-limited routing is sigmoid_bias_grouped's (DeepSeek-V3)");
    s.n_group = int(r.integer(*f, 1, 1024));
  }
  s.topk_group = s.n_group;
  if (auto* f = r.optional("topk_group")) {
    if (s.mode != Mode::sigmoid_bias_grouped) r.fail(*f, "group-limited routing is sigmoid_bias_grouped's (DeepSeek-V3)");
    s.topk_group = int(r.integer(*f, 1, s.n_group));
  }
  if (auto* f = r.optional("routed_scaling_factor")) {
    s.scaling = r.real(*f);
    if (!(s.scaling > 0) || s.scaling > 1e6) r.fail(*f, "must be a positive number up to 1e6");
  }
  if (auto* f = top.optional("sorted")) s.sorted = top.boolean(*f);
  if (auto* f = top.optional("math")) s.fast_math = top.choice(*f, {"cuda", "fast"}) == "fast";
  if (spec.compute != Compute::f32 && spec.compute != Compute::f64) {
    const std::string why = "moe_topk's bounds are for scores computed in f32 (or f64): compute must be f32 or f64";
    if (auto* f = top.optional("compute")) top.fail(*f, why);
    top.fail_at(top.line(), "compute", why);
  }
  // dtypes: exactly logits, weights, indices and (with a bias) bias.
  yaml_input::Fields d = top.nested(top.required("dtypes"));
  const std::vector<std::string_view> names = s.bias ? std::vector<std::string_view>{"logits", "bias", "weights", "indices"}
                                                     : std::vector<std::string_view>{"logits", "weights", "indices"};
  for (const auto& f : d.all()) {
    const std::string key = f.key.substr(std::string("dtypes.").size());
    if (std::none_of(names.begin(), names.end(), [&](std::string_view n) { return same_name(n, key); }))
      d.fail(f, same_name(key, "bias") ? "this routing has no bias (routing.bias: false)"
                                       : fmt::format("no tensor of op 'moe_topk' is named '{}' (its tensors: {})", key,
                                                     fmt::join(names, ", ")));
  }
  for (std::string_view n : names)
    if (!spec.dtype(n)) d.fail_at(d.line(), "dtypes." + std::string(n), "missing (required)");
  auto want = [&](std::string_view n, std::initializer_list<DType> ok, const char* what) {
    const DType t = *spec.dtype(n);
    if (std::find(ok.begin(), ok.end(), t) == ok.end()) {
      int line = d.line();
      for (const auto& f : d.all())
        if (same_name(f.key.substr(std::string("dtypes.").size()), n)) line = f.line;
      d.fail_at(line, "dtypes." + std::string(n), what);
    }
  };
  want("logits", {DType::f32, DType::bf16, DType::f16}, "logits must be f32, bf16 or f16");
  if (s.bias) want("bias", {DType::f32}, "bias must be f32");
  want("weights", {DType::f32}, "weights must be f32");
  want("indices", {DType::i32}, "indices must be i32");
  return s;
}

Case make_case(const Parts& p) {
  Case c;
  c.op = "moe_topk";
  c.sizes = {{"tokens", p.sizes.tokens}, {"experts", p.sizes.experts}, {"topk", p.sizes.topk}};
  const rows::Shape in = logits_shape(p.sizes), out = out_shape(p.sizes);
  c.tensors.push_back(rows::element_tensor("logits", Role::input, p.logits_type, in, p.logits));
  c.tensors.back().keep = p.keep;
  if (p.bias) c.tensors.push_back(rows::column_tensor("bias", Role::input, DType::f32, in, p.bias_layout));
  c.tensors.push_back(rows::element_tensor("weights", Role::output, DType::f32, out, p.weights));
  c.tensors.push_back(rows::element_tensor("indices", Role::output, DType::i32, out, p.indices));
  c.scalars = {{"topk", double(p.sizes.topk)}};
  c.recipe = p.recipe, c.seed = p.seed, c.origin = p.origin;
  return c;
}

Positions positions(const Case& c) {
  Positions at;
  if (c.tensors.size() == 4) at.bias = 1, at.weights = 2, at.indices = 3;
  return at;
}

Sizes sizes_of(const Case& c) {
  if (c.sizes.size() != 3 || c.sizes[0].name != "tokens" || c.sizes[1].name != "experts" || c.sizes[2].name != "topk")
    bad(c, "its sizes must be tokens, experts, topk");
  return Sizes{c.sizes[0].value, c.sizes[1].value, c.sizes[2].value};
}

Parts parts_of(const Case& c) {
  const Sizes z = sizes_of(c);
  if (c.tensors.size() != 3 && c.tensors.size() != 4) bad(c, "it must have 3 tensors (4 with a bias)");
  const Positions at = positions(c);
  Parts p;
  p.sizes = z, p.bias = at.bias >= 0;
  p.logits_type = c.tensors[size_t(at.logits)].dtype;
  p.logits = rows::layout_of(c.tensors[size_t(at.logits)], logits_shape(z), rows::Kind::element);
  if (p.bias) p.bias_layout = rows::layout_of(c.tensors[size_t(at.bias)], logits_shape(z), rows::Kind::column);
  p.weights = rows::layout_of(c.tensors[size_t(at.weights)], out_shape(z), rows::Kind::element);
  p.indices = rows::layout_of(c.tensors[size_t(at.indices)], out_shape(z), rows::Kind::element);
  p.recipe = c.recipe, p.seed = c.seed, p.keep = c.tensors[size_t(at.logits)].keep, p.origin = c.origin;
  return p;
}

bool routable(const Sizes& z, const Settings& s) {
  if (z.tokens < 0 || z.experts < 1 || z.topk < 1 || z.topk > z.experts) return false;
  if (!s.grouped()) return true;
  return z.experts % s.n_group == 0 && z.topk <= int64_t(s.topk_group) * (z.experts / s.n_group);
}

void validate_case(const Case& c, const Settings& s) {
  if (c.op != "moe_topk") bad(c, "its op must be moe_topk");
  const Sizes z = sizes_of(c);
  if (z.tokens < 0) bad(c, "tokens must not be negative");
  if (z.experts < 1) bad(c, "experts must be at least 1");
  if (z.topk < 1 || z.topk > z.experts) bad(c, "topk must be in [1, experts]");
  if (s.grouped() && z.experts % s.n_group != 0)
    bad(c, fmt::format("experts must be a multiple of routing.n_group ({})", s.n_group));
  if (!routable(z, s))
    bad(c, fmt::format("topk must be at most topk_group x experts / n_group = {}",
                       int64_t(s.topk_group) * (z.experts / s.n_group)));
  const size_t want = s.bias ? 4 : 3;
  if (c.tensors.size() != want)
    bad(c, s.bias ? "it must have logits, bias, weights, indices" : "it must have logits, weights, indices");
  const Parts p = parts_of(c);
  const Case plain = make_case(p);  // names, roles, shapes and dtypes as the convention has them
  for (size_t i = 0; i < want; ++i) {
    const CaseTensor &t = c.tensors[i], &e = plain.tensors[i];
    if (t.name != e.name || t.role != e.role)
      bad(c, fmt::format("tensor {} must be {} ({})", i, e.name, assay::name(e.role)));
    if (t.shape != e.shape) bad(c, fmt::format("{} must have shape [{}]", e.name, fmt::join(e.shape, ", ")));
    if (t.strides.size() != t.shape.size()) bad(c, fmt::format("{} needs one stride per dimension", e.name));
    if (i == 0 ? !(t.dtype == DType::f32 || t.dtype == DType::bf16 || t.dtype == DType::f16) : t.dtype != e.dtype)
      bad(c, fmt::format("{} has the wrong dtype ({})", e.name, assay::name(t.dtype)));
  }
  if (c.scalars.size() != 1 || c.scalars[0].name != "topk" || c.scalars[0].value != double(z.topk))
    bad(c, "its one scalar must be topk, equal to the size topk");
}

Parts plain_parts(const Spec& spec, const Settings& s, Sizes z, std::string origin) {
  Parts p;
  p.sizes = z, p.bias = s.bias;
  p.logits_type = spec.dtype_or("logits", DType::f32);
  p.origin = std::move(origin);
  return p;
}

Context::Context(const Case& c) : z_(sizes_of(c)) {
  for (size_t i = 0; i < c.tensors.size(); ++i) tensors_.emplace_back(c.tensors[i].name, c.geom(int(i)));
}
std::optional<double> Context::variable(std::string_view name) const {
  if (name == "tokens") return double(z_.tokens);
  if (name == "experts") return double(z_.experts);
  if (name == "topk") return double(z_.topk);
  return std::nullopt;
}
std::optional<TensorGeom> Context::tensor(std::string_view name) const {
  for (const auto& [n, g] : tensors_)
    if (n == name) return g;
  return std::nullopt;
}

std::optional<double> Names::variable(std::string_view n) const {
  if (n == "tokens" || n == "experts" || n == "topk") return 0.0;
  return std::nullopt;
}
std::optional<TensorGeom> Names::tensor(std::string_view n) const {
  if (n == "logits" || n == "bias" || n == "weights" || n == "indices") return TensorGeom{};
  return std::nullopt;
}

}  // namespace assay::moe_topk
