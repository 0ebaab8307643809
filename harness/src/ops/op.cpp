// The op registry and the behaviour most ops share.
#include "ops/op.h"

#include <algorithm>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "case/rng.h"
#include "core/error.h"
#include "core/yaml_input.h"

namespace assay {
namespace {

std::map<std::string, OpFactory, std::less<>>& factories() {
  static std::map<std::string, OpFactory, std::less<>> f;  // filled during static initialisation
  return f;
}

// Sizes and scalars as variables, tensors by name.
class CaseContext final : public EvalContext {
 public:
  explicit CaseContext(const Case& c) : c_(c) {}
  std::optional<double> variable(std::string_view name) const override {
    for (auto& s : c_.sizes)
      if (s.name == name) return double(s.value);
    for (auto& s : c_.scalars)
      if (s.name == name) return s.value;
    return std::nullopt;
  }
  std::optional<TensorGeom> tensor(std::string_view name) const override {
    const int i = c_.tensor_index(name);
    if (i < 0) return std::nullopt;
    return c_.geom(i);
  }

 private:
  Case c_;
};

}  // namespace

bool register_op(std::string_view name, OpFactory factory) {
  factories().emplace(std::string(name), std::move(factory));
  return true;
}

std::vector<std::string> registered_ops() {
  std::vector<std::string> names;
  for (auto& [n, f] : factories()) names.push_back(n);
  return names;
}

std::string_view default_op_name() { return "gemm"; }

std::shared_ptr<const Op> make_op(const Spec& spec) {
  if (spec.op.empty()) {
    Spec named = spec;
    named.op = std::string(default_op_name());
    return make_op(named);
  }
  auto it = factories().find(spec.op);
  if (it == factories().end())
    throw InputError(fmt::format("{}: unknown op '{}' (known: {})", spec.file.string(), spec.op,
                                 fmt::join(registered_ops(), ", ")));
  return it->second(spec);
}

const Op& op_of(const Spec& spec) {
  if (spec.impl) return *spec.impl;
  // A Spec built in code, not read from a file: the op with its defaults,
  // made once per op name.
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Op>, std::less<>> made;
  std::lock_guard lock(mu);
  auto it = made.find(spec.op);
  if (it == made.end()) it = made.emplace(spec.op, make_op(spec)).first;
  return *it->second;
}

std::shared_ptr<const Op> default_op(std::string_view name) {
  auto it = factories().find(name);
  if (it == factories().end()) return nullptr;
  Spec s;
  s.op = std::string(name);
  try {
    return it->second(s);
  } catch (const InputError&) {
    return nullptr;  // an op that cannot exist without its spec (custom)
  }
}

std::unique_ptr<EvalContext> case_context(const Case& c) { return std::make_unique<CaseContext>(c); }

std::unique_ptr<EvalContext> Op::context(const Case& c) const { return case_context(c); }

// Each tensor is held seven times when planned (docs/isolation.md): up to
// 4 MiB of tensors those copies take tens of microseconds on a GPU, less than
// the two turns between processes each call saves.
bool Op::plannable(const Case& c) const {
  double tensor_bytes = 0;
  for (int i = 0; i < int(c.tensors.size()); ++i) {
    const TensorGeom g = c.geom(i);
    tensor_bytes += double(std::max<int64_t>(g.span(), 1)) * double(dtype_bytes(g.dtype));
  }
  return work(c) <= double(1 << 28) && tensor_bytes <= double(4 << 20);
}

BenchCost Op::bench_cost(const Case& c) const {
  BenchCost cost;
  for (int i = 0; i < int(c.tensors.size()); ++i) {
    const TensorGeom g = c.geom(i);
    const double bytes = double(g.count()) * double(dtype_bytes(g.dtype));
    const bool input = c.tensors[size_t(i)].role == Role::input;
    cost.bytes += input ? bytes : bytes * (reads_initial(c, i) ? 2 : 1);
  }
  return cost;
}

bool Op::reads_initial(const Case& c, int tensor) const { return c.tensors[size_t(tensor)].role == Role::inout; }

bool Op::is_huge(const Case& c, const CodecLimits& lim) const {
  return std::any_of(c.sizes.begin(), c.sizes.end(), [&](auto& s) { return s.value >= lim.max_dim; });
}

Relabeling Op::relabeling(const Case&) const { return {}; }

SparseChange Op::sparse_change(const Case& c) const {
  std::vector<int> candidates;  // the tensors the result reads
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const bool read = c.tensors[i].role == Role::input || reads_initial(c, int(i));
    if (read && c.geom(int(i)).count() > 0) candidates.push_back(int(i));
  }
  return draw_sparse_change(c, candidates);
}

std::vector<std::byte> output_on_host(Backend& backend, const JudgeInput& in, int tensor) {
  const TensorGeom g = in.c.geom(tensor);
  std::vector<std::byte> image(size_t(std::max<int64_t>(g.span(), 1)) * size_t(dtype_bytes(g.dtype)));
  backend.read(in.out[size_t(tensor)], size_t(g.span()) * size_t(dtype_bytes(g.dtype)), image.data());
  return image;
}

void read_doubles(Backend& backend, const double* at, size_t count, double* host) {
  backend.read(at, count * sizeof(double), host);
}

SparseChange draw_sparse_change(const Case& c, const std::vector<int>& candidates) {
  SparseChange s;
  if (candidates.empty()) return s;
  uint64_t h = mix64(c.seed ^ 0x5ba25e0003ull);
  auto next = [&h](uint64_t n) { h = mix64(h + 0x9e3779b97f4a7c15ull); return h % n; };
  s.tensor = candidates[next(candidates.size())];
  const TensorGeom g = c.geom(s.tensor);
  s.patch.seed = mix64(c.seed ^ 0x5eed0003ull);
  switch (next(3)) {
    case 0: s.patch.listed = 1; break;  // one element
    case 1: s.patch.row = int64_t(next(uint64_t(g.rows()))); return s;
    default: s.patch.listed = int32_t(2 + next(Patch::kMaxListed - 1)); break;  // 2..8 scattered
  }
  for (int i = 0; i < s.patch.listed; ++i)
    s.patch.at[i] = keep_position(next(uint64_t(g.rows())), next(uint64_t(g.cols())));
  return s;
}

RecipeParams Op::params_for(const Case& c, int tensor) const {
  RecipeParams p = recipe_params(c, tensor);
  p.keep = c.tensors[size_t(tensor)].keep;
  return p;
}

void check_spec_keys(const Spec& spec, std::initializer_list<std::string_view> op_keys,
                     std::initializer_list<std::string_view> tensors, bool takes_fp8) {
  if (!spec.yaml || !spec.yaml.IsMap()) return;  // a Spec built in code
  yaml_input::Fields top(spec.file.string(), spec.yaml);
  std::vector<std::string_view> allowed(std::begin(kGenericSpecKeys), std::end(kGenericSpecKeys));
  allowed.insert(allowed.end(), op_keys.begin(), op_keys.end());
  top.only(allowed);
  if (const yaml_input::Field* f = top.optional("dtypes"); f && !takes_fp8) {
    yaml_input::Fields d = top.nested(*f);
    for (const auto& e : d.all())
      if (auto t = e.value.IsScalar() ? parse_dtype(e.value.Scalar()) : std::nullopt; t && is_fp8(*t))
        d.fail(e, fmt::format("{} is an FP8 storage type: op '{}' takes no FP8 tensors (fp8_gemm does)",
                              assay::name(*t), spec.op));
  }
  if (tensors.size() == 0) return;
  yaml_input::Fields d = top.nested(top.required("dtypes"));
  std::vector<std::string_view> names;
  for (auto t : tensors) names.push_back(t);
  for (const auto& f : d.all()) {
    const std::string key = f.key.substr(std::string("dtypes.").size());
    auto same = [&](std::string_view t) {
      return t.size() == key.size() && std::equal(t.begin(), t.end(), key.begin(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
             });
    };
    if (std::none_of(names.begin(), names.end(), same))
      d.fail(f, fmt::format("no tensor of op '{}' is named '{}' (its tensors: {})", spec.op, key, fmt::join(names, ", ")));
  }
  for (auto t : tensors)
    if (!spec.dtype(t)) d.fail_at(d.line(), "dtypes." + std::string(t), "missing (required)");
}

}  // namespace assay
