// Reading spec files: every key is checked for type and value, and every
// problem is reported as "FILE:LINE: key 'X': what is wrong".
#include "spec/spec.h"

#include <algorithm>
#include <cctype>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/bench_shapes.h"
#include "core/error.h"
#include "core/yaml_input.h"
#include "judge/verdict.h"
#include "ops/op.h"

namespace assay {
namespace {

namespace fs = std::filesystem;
using yaml_input::Field;
using yaml_input::Fields;
using yaml_input::quote;

bool is_c_identifier(const std::string& s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

DType read_dtype(const Fields& f, std::string_view key) {
  return *parse_dtype(f.choice(f.required(key), {"f64", "f32", "f16", "bf16", "i64", "i32", "e4m3", "e5m2"}));
}

// Keyed by tensor name; the op checks the names when it is made.
void read_dtypes(const Fields& top, Spec& s) {
  const Field* f = top.optional("dtypes");  // an op whose tensors declare theirs (custom) needs none
  if (!f) return;
  Fields d = top.nested(*f);
  for (const Field& f : d.all()) {
    const std::string tensor = f.key.substr(std::string("dtypes.").size());
    s.dtypes.push_back({tensor, read_dtype(d, tensor)});
  }
}

void read_requires(const Fields& top, const Field& f, Spec& s, const EvalContext& names) {
  for (auto& [text, line] : top.strings(f, /*scalar_ok=*/true)) {
    try {
      Requirement r = Requirement::parse(text);
      r.check_names(names);
      s.requires_.push_back(std::move(r));
    } catch (const RequiresSyntaxError& e) {
      top.fail_at(line, f.key, std::string(e.what()) + " in " + quote(text));
    }
  }
}

// The source path is relative to the spec's folder; it must name a file.
fs::path resolve_source(const Fields& top, const Field& f, const fs::path& spec_file) {
  std::string rel = top.string(f);
  std::error_code ec;
  fs::path dir = fs::absolute(spec_file, ec).parent_path();
  if (ec) top.fail(f, "cannot resolve the spec's folder: " + ec.message());
  fs::path p = fs::weakly_canonical(dir / rel, ec);
  if (ec) top.fail(f, "cannot resolve " + quote(rel) + ": " + ec.message());
  if (!fs::is_regular_file(p, ec)) top.fail(f, "source file " + quote(rel) + " not found (looked for " + p.string() + ")");
  return p;
}

void read_optional(const Fields& top, Spec& s) {
  if (auto* f = top.optional("entry")) {
    s.entry = top.string(*f);
    if (!is_c_identifier(s.entry)) top.fail(*f, quote(s.entry) + " is not a C identifier");
  }
  if (auto* f = top.optional("subnormals"))
    s.subnormals = top.choice(*f, {"ieee", "flush"}) == "flush" ? Subnormals::flush : Subnormals::ieee;
  if (auto* f = top.optional("deterministic")) s.deterministic = top.boolean(*f);
  if (auto* f = top.optional("expect")) {
    s.expect = top.string(*f);
    if (!parse_verdict(s.expect)) top.fail(*f, quote(s.expect) + " is not 'pass' or a verdict name");
  }
  if (auto* f = top.optional("bench")) s.bench = bench::read_shapes(f->value, top.file(), f->key, f->line);
  if (auto* f = top.optional("bench_expect")) {
    s.bench_expect = top.string(*f);
    const bool speed = s.bench_expect == "FASTER" || s.bench_expect == "SLOWER" || s.bench_expect == "SAME";
    const bool own = s.bench_expect == "timing_escape" || s.bench_expect == "impossible_speed";
    if (!speed && !own && (!parse_verdict(s.bench_expect) || s.bench_expect == "pass"))
      top.fail(*f, quote(s.bench_expect) + " is not FASTER, SLOWER, SAME, timing_escape, impossible_speed or a verdict name");
  }
  if (auto* f = top.optional("flags"))
    for (auto& [flag, line] : top.strings(*f)) s.flags.push_back(flag);
  if (auto* f = top.optional("libs"))
    for (auto& [lib, line] : top.strings(*f)) {
      if (lib != "cublas") top.fail_at(line, f->key, "unknown library " + quote(lib) + " (allowed: cublas)");
      s.libs.push_back(lib);
    }
}

}  // namespace

Spec parse_spec(const std::string& yaml_text, const fs::path& file) {
  const std::string name = file.string();
  YAML::Node root = yaml_input::load_mapping(yaml_text, name);
  Spec s;
  s.file = file;
  try {
    Fields top(name, root);
    s.yaml = root;
    s.op = std::string(default_op_name());
    if (auto* f = top.optional("op")) {
      s.op = top.string(*f);
      const auto known = registered_ops();
      if (std::find(known.begin(), known.end(), s.op) == known.end())
        top.fail(*f, fmt::format("unknown op {} (known: {})", quote(s.op), fmt::join(known, ", ")));
    }
    // A key no op shares (a misspelled `name`): the op says whether it is one
    // of its own before any required key is found missing, so that a typo is
    // reported as an unknown key, not as the key it was meant to be.
    for (const Field& f : top.all())
      if (std::find(std::begin(kGenericSpecKeys), std::end(kGenericSpecKeys), f.key) == std::end(kGenericSpecKeys)) {
        read_dtypes(top, s);
        make_op(s);
        s.dtypes.clear();
        break;
      }
    s.name = top.string(top.required("name"));
    s.backend = top.choice(top.required("backend"), {"cuda", "host"}) == "cuda" ? BackendKind::cuda
                                                                                : BackendKind::host;
    s.source = resolve_source(top, top.required("source"), file);
    read_dtypes(top, s);
    s.compute = *parse_compute(top.choice(top.required("compute"), {"f64", "f32", "tf32", "f16", "bf16"}));
    read_optional(top, s);
    // The op checks its own keys, the dtypes' tensor names and its sizes;
    // then the requires' names are checked against the op's.
    s.impl = make_op(s);
    if (auto* f = top.optional("requires")) read_requires(top, *f, s, *s.impl->names_context());
  } catch (const YAML::Exception& e) {  // not expected: yaml-cpp already parsed it
    throw InputError(name + ": malformed YAML: " + e.msg);
  }
  return s;
}

namespace {
std::string lower(std::string_view x) {
  std::string l(x);
  for (char& ch : l) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return l;
}
}  // namespace

std::optional<DType> Spec::dtype(std::string_view tensor) const {
  for (const auto& d : dtypes)
    if (lower(d.name) == lower(tensor)) return d.value;
  return std::nullopt;
}

void Spec::set_dtype(std::string_view tensor, DType t) {
  for (auto& d : dtypes)
    if (lower(d.name) == lower(tensor)) {
      d.value = t;
      return;
    }
  dtypes.push_back({std::string(tensor), t});
}

Spec load_spec(const fs::path& file) { return parse_spec(yaml_input::read_file(file), file); }

std::vector<fs::path> collect_spec_files(const std::vector<std::string>& paths) {
  std::vector<fs::path> specs;
  for (const auto& p : paths) {
    if (!fs::is_directory(p)) {
      specs.emplace_back(p);  // a missing file is reported by the spec loader
      continue;
    }
    std::vector<fs::path> found;
    for (auto& e : fs::recursive_directory_iterator(p))
      if (e.is_regular_file() && (e.path().extension() == ".yaml" || e.path().extension() == ".yml"))
        found.push_back(e.path());
    std::sort(found.begin(), found.end());
    if (found.empty()) throw InputError(fmt::format("{}: no spec files (*.yaml) in this folder", p));
    specs.insert(specs.end(), found.begin(), found.end());
  }
  return specs;
}

}  // namespace assay
