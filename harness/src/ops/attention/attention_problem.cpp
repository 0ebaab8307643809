#include "ops/attention/attention_problem.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "core/yaml_input.h"

namespace assay::attention {
namespace {

[[noreturn]] void bad(const Case& c, const std::string& why) {
  throw InputError(fmt::format("not an attention case: {} ({})", why, describe(c)));
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// [b, h, s, e] (e = 0: lse's [b, h, s]) with the layout's strides.
CaseTensor tensor_of(const char* name, Role role, DType t, int64_t b, int64_t h, int64_t s, int64_t e,
                     const Layout& l) {
  CaseTensor x;
  x.name = name, x.role = role, x.dtype = t, x.offset = l.offset;
  const int64_t inner = e > 0 ? e : 1;
  int64_t s0, s1, s2;
  if (l.bshd) {
    s1 = inner, s2 = h * inner + l.pad, s0 = s * s2 + l.batch_gap;
  } else {
    s2 = inner + l.pad, s1 = s * s2, s0 = h * s1 + l.batch_gap;
  }
  if (e > 0) {
    x.shape = {b, h, s, e}, x.strides = {s0, s1, s2, 1};
  } else {
    x.shape = {b, h, s}, x.strides = {s0, s1, s2};
  }
  return x;
}

// The layout whose strides these are: the bhsd reading first, then bshd
// (where both fit, e.g. one head, they give the same strides); a stride
// tensor_of cannot write is read as the nearest bhsd layout.
Layout layout_of(const CaseTensor& t, int64_t b, int64_t h, int64_t s, int64_t e) {
  if (t.strides.size() < 3) return Layout{false, 0, 0, t.offset};
  const int64_t inner = e > 0 ? e : 1;
  const Layout bhsd{false, std::max<int64_t>(0, t.strides[2] - inner),
                    std::max<int64_t>(0, t.strides[0] - h * t.strides[1]), t.offset};
  const Layout bshd{true, std::max<int64_t>(0, t.strides[2] - h * inner),
                    std::max<int64_t>(0, t.strides[0] - s * t.strides[2]), t.offset};
  for (const Layout& l : {bhsd, bshd})
    if (tensor_of("", t.role, t.dtype, b, h, s, e, l).strides == t.strides) return l;
  return bhsd;
}

}  // namespace

bool valid(const Sizes& z) {
  return z.b >= 1 && z.hq >= 1 && z.hk >= 1 && z.hq % z.hk == 0 && z.sq >= 1 && z.sk >= 1 && z.d >= 1 &&
         z.dv >= 1 && z.d <= kMaxHeadDim && z.dv <= kMaxHeadDim;
}

Settings read_settings(const Spec& spec) {
  Settings s;
  if (!spec.yaml || !spec.yaml.IsMap()) return s;  // a Spec built in code: the defaults
  yaml_input::Fields top(spec.file.string(), spec.yaml);
  if (auto* f = top.optional("p_dtype")) {
    const std::string t = top.choice(*f, {"f32", "f16", "bf16"});
    s.p_dtype = t == "f16" ? DType::f16 : t == "bf16" ? DType::bf16 : DType::f32;
  }
  if (auto* f = top.optional("empty_rows")) s.empty_nan = top.choice(*f, {"zero", "nan"}) == "nan";
  if (auto* f = top.optional("math")) {
    const std::string m = top.choice(*f, {"ieee", "cuda", "fast"});
    s.math = m == "ieee" ? softmax::Math::ieee : m == "fast" ? softmax::Math::fast : softmax::Math::cuda;
  }
  if (auto* f = top.optional("writes")) {
    bool o = false, lse = false;
    for (const auto& [w, line] : top.strings(*f)) {
      if (w == "o") o = true;
      else if (w == "lse") lse = true;
      else top.fail_at(line, "writes", fmt::format("'{}' is not an output of attention (its outputs: o, lse)", w));
    }
    if (!o) top.fail(*f, "must name o (the kernel's one required output)");
    s.writes_lse = lse;
  }
  if (spec.compute != Compute::f32 && spec.compute != Compute::f64 && spec.compute != Compute::tf32) {
    const std::string why = "attention accumulates in f32, f64 or tf32 (its tensor-core inputs): compute must be one";
    if (auto* f = top.optional("compute")) top.fail(*f, why);
    top.fail_at(top.line(), "compute", why);
  }
  // dtypes: exactly q, k, v, o and (when written) lse.
  yaml_input::Fields d = top.nested(top.required("dtypes"));
  const std::vector<std::string_view> names = s.writes_lse ? std::vector<std::string_view>{"q", "k", "v", "o", "lse"}
                                                           : std::vector<std::string_view>{"q", "k", "v", "o"};
  for (const auto& f : d.all()) {
    const std::string key = f.key.substr(std::string("dtypes.").size());
    if (std::none_of(names.begin(), names.end(), [&](std::string_view n) { return same_name(n, key); }))
      d.fail(f, same_name(key, "lse") ? "this kernel writes no lse (writes: [o])"
                                      : fmt::format("no tensor of op 'attention' is named '{}' (its tensors: {})", key,
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
  for (const char* n : {"q", "k", "v", "o"})
    want(n, {DType::f32, DType::bf16, DType::f16}, "q, k, v and o must be f32, bf16 or f16");
  if (s.writes_lse) want("lse", {DType::f32}, "lse must be f32");
  return s;
}

Case make_case(const Parts& p) {
  const Sizes& z = p.sizes;
  Case c;
  c.op = "attention";
  c.sizes = {{"b", z.b}, {"hq", z.hq}, {"hk", z.hk}, {"sq", z.sq}, {"sk", z.sk}, {"d", z.d}, {"dv", z.dv}};
  c.tensors.push_back(tensor_of("q", Role::input, p.q_type, z.b, z.hq, z.sq, z.d, p.q));
  c.tensors.back().keep = p.q_keep;
  c.tensors.push_back(tensor_of("k", Role::input, p.k_type, z.b, z.hk, z.sk, z.d, p.k));
  c.tensors.back().keep = p.k_keep;
  c.tensors.push_back(tensor_of("v", Role::input, p.v_type, z.b, z.hk, z.sk, z.dv, p.v));
  c.tensors.back().keep = p.v_keep;
  c.tensors.push_back(tensor_of("o", Role::output, p.o_type, z.b, z.hq, z.sq, z.dv, p.o));
  if (p.lse) c.tensors.push_back(tensor_of("lse", Role::output, DType::f32, z.b, z.hq, z.sq, 0, p.lse_layout));
  c.scalars = {{"scale", p.scale}, {"causal", p.causal ? 1.0 : 0.0}};
  c.recipe = p.recipe, c.seed = p.seed, c.origin = p.origin;
  return c;
}

Sizes sizes_of(const Case& c) {
  static constexpr const char* kNames[] = {"b", "hq", "hk", "sq", "sk", "d", "dv"};
  if (c.sizes.size() != 7) bad(c, "its sizes must be b, hq, hk, sq, sk, d, dv");
  for (size_t i = 0; i < 7; ++i)
    if (c.sizes[i].name != kNames[i]) bad(c, "its sizes must be b, hq, hk, sq, sk, d, dv");
  return Sizes{c.sizes[0].value, c.sizes[1].value, c.sizes[2].value, c.sizes[3].value,
               c.sizes[4].value, c.sizes[5].value, c.sizes[6].value};
}

bool has_lse(const Case& c) { return c.tensors.size() == 5; }

Parts parts_of(const Case& c) {
  const Sizes z = sizes_of(c);
  if (c.tensors.size() != 4 && c.tensors.size() != 5) bad(c, "it must have 4 tensors (5 with lse)");
  if (c.scalars.size() != 2 || c.scalars[0].name != "scale" || c.scalars[1].name != "causal")
    bad(c, "its scalars must be scale, causal");
  Parts p;
  p.sizes = z, p.lse = has_lse(c);
  p.q_type = c.tensors[Q].dtype, p.k_type = c.tensors[K].dtype, p.v_type = c.tensors[V].dtype;
  p.o_type = c.tensors[O].dtype;
  p.q = layout_of(c.tensors[Q], z.b, z.hq, z.sq, z.d), p.k = layout_of(c.tensors[K], z.b, z.hk, z.sk, z.d);
  p.v = layout_of(c.tensors[V], z.b, z.hk, z.sk, z.dv), p.o = layout_of(c.tensors[O], z.b, z.hq, z.sq, z.dv);
  if (p.lse) p.lse_layout = layout_of(c.tensors[LSE], z.b, z.hq, z.sq, 0);
  p.scale = c.scalars[0].value, p.causal = c.scalars[1].value != 0;
  p.recipe = c.recipe, p.seed = c.seed, p.origin = c.origin;
  p.q_keep = c.tensors[Q].keep, p.k_keep = c.tensors[K].keep, p.v_keep = c.tensors[V].keep;
  return p;
}

void validate_case(const Case& c, const Settings& s) {
  if (c.op != "attention") bad(c, "its op must be attention");
  const Sizes z = sizes_of(c);
  if (z.b < 1 || z.hq < 1 || z.hk < 1 || z.sq < 1 || z.sk < 1 || z.d < 1 || z.dv < 1)
    bad(c, "every size must be at least 1");
  if (z.hq % z.hk != 0) bad(c, "hq must be a multiple of hk");
  if (z.d > kMaxHeadDim || z.dv > kMaxHeadDim) bad(c, fmt::format("d and dv must be at most {}", kMaxHeadDim));
  const size_t want = s.writes_lse ? 5 : 4;
  if (c.tensors.size() != want)
    bad(c, s.writes_lse ? "it must have q, k, v, o, lse" : "it must have q, k, v, o (the spec writes no lse)");
  const Parts p = parts_of(c);
  const Case plain = make_case(p);  // names, roles, shapes as the convention has them
  for (size_t i = 0; i < want; ++i) {
    const CaseTensor &t = c.tensors[i], &e = plain.tensors[i];
    if (t.name != e.name || t.role != e.role)
      bad(c, fmt::format("tensor {} must be {} ({})", i, e.name, assay::name(e.role)));
    if (t.shape != e.shape) bad(c, fmt::format("{} must have shape [{}]", e.name, fmt::join(e.shape, ", ")));
    if (t.strides.size() != t.shape.size()) bad(c, fmt::format("{} needs one stride per dimension", e.name));
    const bool ok = i == size_t(LSE) ? t.dtype == DType::f32
                                     : (t.dtype == DType::f32 || t.dtype == DType::bf16 || t.dtype == DType::f16);
    if (!ok) bad(c, fmt::format("{} has the wrong dtype ({})", e.name, assay::name(t.dtype)));
  }
  if (!std::isfinite(p.scale)) bad(c, "scale must be finite");
  if (c.scalars[1].value != 0 && c.scalars[1].value != 1) bad(c, "causal must be 0 or 1");
}

bool usual_scale(double scale, int64_t d) { return std::fabs(scale * std::sqrt(double(d)) - 1.0) < 1e-12; }

Parts plain_parts(const Spec& spec, const Settings& s, Sizes z, std::string origin) {
  Parts p;
  p.sizes = z, p.lse = s.writes_lse;
  p.q_type = spec.dtype_or("q", DType::f32), p.k_type = spec.dtype_or("k", DType::f32);
  p.v_type = spec.dtype_or("v", DType::f32), p.o_type = spec.dtype_or("o", DType::f32);
  p.scale = 1.0 / std::sqrt(double(z.d));
  p.origin = std::move(origin);
  return p;
}

Context::Context(const Case& c) : z_(sizes_of(c)) {
  if (c.scalars.size() == 2) scale_ = c.scalars[0].value, causal_ = c.scalars[1].value;
  for (size_t i = 0; i < c.tensors.size(); ++i) tensors_.emplace_back(c.tensors[i].name, c.geom(int(i)));
}
std::optional<double> Context::variable(std::string_view name) const {
  if (name == "b") return double(z_.b);
  if (name == "hq") return double(z_.hq);
  if (name == "hk") return double(z_.hk);
  if (name == "sq") return double(z_.sq);
  if (name == "sk") return double(z_.sk);
  if (name == "d") return double(z_.d);
  if (name == "dv") return double(z_.dv);
  if (name == "scale") return scale_;
  if (name == "causal") return causal_;
  return std::nullopt;
}
std::optional<TensorGeom> Context::tensor(std::string_view name) const {
  for (const auto& [n, g] : tensors_)
    if (n == name) return g;
  return std::nullopt;
}

std::optional<double> Names::variable(std::string_view n) const {
  for (const char* v : {"b", "hq", "hk", "sq", "sk", "d", "dv", "scale", "causal"})
    if (n == v) return 0.0;
  return std::nullopt;
}
std::optional<TensorGeom> Names::tensor(std::string_view n) const {
  if (n == "q" || n == "k" || n == "v" || n == "o" || n == "lse") return TensorGeom{};
  return std::nullopt;
}

}  // namespace assay::attention
