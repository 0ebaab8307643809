#include "bench/bench_shapes.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "core/yaml_input.h"
#include "ops/op.h"

namespace assay::bench {

std::vector<BenchShape> read_shapes(const YAML::Node& list, const std::string& file, const std::string& key, int line) {
  auto fail = [&](int at, const std::string& problem) {
    throw InputError(fmt::format("{}:{}: key '{}': {}", file, at, key, problem));
  };
  if (!list.IsSequence() || list.size() == 0) fail(line, "expected a non-empty list of shapes, e.g. [{m: 4096, n: 4096, k: 4096}]");
  std::vector<BenchShape> shapes;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& entry = list[i];
    const int at = entry.Mark().line >= 0 ? entry.Mark().line + 1 : line;
    if (!entry.IsMap() || entry.size() == 0) fail(at, fmt::format("shape {}: expected a mapping of sizes, e.g. {{m: 128, n: 64}}", i + 1));
    yaml_input::Fields sizes(file, entry, fmt::format("{}[{}].", key, i));
    BenchShape shape;
    for (const yaml_input::Field& f : sizes.all()) {
      std::string name = f.key.substr(f.key.rfind('.') + 1);
      shape.push_back({name, sizes.integer(f, 0, int64_t(1) << 40)});
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

std::vector<BenchShape> load_shapes_file(const std::filesystem::path& file) {
  const std::string name = file.string();
  YAML::Node root = yaml_input::load_mapping(yaml_input::read_file(file), name);
  yaml_input::Fields top(name, root);
  top.only({"shapes"});
  const yaml_input::Field& f = top.required("shapes");
  return read_shapes(f.value, name, "shapes", f.line);
}

std::string shape_text(const BenchShape& shape) {
  std::string s;
  for (const auto& [name, value] : shape) s += fmt::format("{}{}={}", s.empty() ? "" : " ", name, value);
  return s;
}

std::vector<BenchShape> host_shapes(std::vector<BenchShape> shapes) {
  for (BenchShape& s : shapes)
    for (auto& size : s) size.value = std::max<int64_t>(1, size.value / kHostShapeDivisor);
  return shapes;
}

Case bench_case(const Op& op, const Spec& spec, const BenchShape& shape, uint64_t seed) {
  std::vector<Case> seeds = op.seed_cases(spec);
  if (seeds.empty()) throw InputError(fmt::format("{}: op '{}' has no plain case to bench", spec.file.string(), op.name()));
  const Case& base = seeds.front();
  std::vector<std::string> names;
  for (const auto& s : base.sizes) names.push_back(s.name);
  const std::string known = fmt::format("{}", fmt::join(names, ", "));
  std::vector<int64_t> values;
  for (const auto& s : base.sizes) {
    auto it = std::find_if(shape.begin(), shape.end(), [&](const auto& x) { return x.name == s.name; });
    if (it == shape.end())
      throw InputError(fmt::format("bench shape '{}' lacks size '{}' (op {} has sizes {})", shape_text(shape), s.name,
                                   op.name(), known));
    values.push_back(it->value);
  }
  for (const auto& x : shape)
    if (std::find(names.begin(), names.end(), x.name) == names.end())
      throw InputError(fmt::format("bench shape '{}': op {} has no size '{}' (its sizes: {})", shape_text(shape),
                                   op.name(), x.name, known));
  Case c = op.resize(base, values, /*keep_layout=*/false);
  // The simplest layout the op knows (every tensor plain), where it has one.
  for (Case& x : op.simplifications(c))
    if (x.sizes == c.sizes && x.scalars == c.scalars) {
      c = std::move(x);
      break;
    }
  c.recipe = Recipe::uniform, c.seed = seed, c.origin = "bench " + shape_text(shape);
  std::optional<Case> fit = op.fit_requires(c, spec);
  if (!fit || !(fit->sizes == c.sizes))
    throw InputError(fmt::format("bench shape '{}' is outside the spec's requires ({})", shape_text(shape), spec.file.string()));
  op.validate(*fit);
  return *fit;
}

}  // namespace assay::bench
