// Case files: a Case written as YAML and read back bit for bit. Numbers are
// printed in their shortest round-trip form, so a saved case regenerates the
// exact same inputs.
#include "case/case.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cstdlib>
#include <map>
#include <system_error>

#include "core/error.h"
#include "core/yaml_input.h"

namespace assay {
namespace {

namespace fs = std::filesystem;
using yaml_input::Field;
using yaml_input::Fields;

constexpr int64_t kMaxDim = int64_t(1) << 31;
// Strides and offsets beyond 2^40 elements could not be allocated anyway, and
// the bound keeps index arithmetic far from int64 overflow.
constexpr int64_t kMaxExtent = int64_t(1) << 40;

// A YAML double-quoted string. Control bytes are escaped as \xNN (which
// yaml-cpp decodes back to the same byte); other bytes pass through.
std::string yaml_quoted(std::string_view s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += char(ch);
    } else if (ch < 0x20 || ch == 0x7f) {
      out += fmt::format("\\x{:02x}", ch);
    } else {
      out += char(ch);
    }
  }
  return out + "\"";
}

// Plain when that reads back as the same string (paths, names), quoted otherwise.
std::string yaml_string(std::string_view s) {
  auto safe = [](char ch, bool first) {
    bool word = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                ch == '.' || ch == '/';
    return word || (!first && ch == '-');
  };
  bool plain = !s.empty() && s != "null" && s != "Null" && s != "NULL";
  for (size_t i = 0; plain && i < s.size(); ++i) plain = safe(s[i], i == 0);
  return plain ? std::string(s) : yaml_quoted(s);
}

// Spec paths are written relative to the case file's folder when possible,
// with '/' separators so the file reads the same on every system.
std::string spec_text(const fs::path& spec_path, const fs::path& case_dir) {
  if (case_dir.empty()) return spec_path.generic_string();
  std::error_code ec;
  fs::path rel = fs::relative(spec_path, case_dir, ec);
  if (ec || rel.empty()) return fs::absolute(spec_path, ec).generic_string();
  return rel.generic_string();
}

DType read_dtype(const Fields& f, const Field& at) {
  return *parse_dtype(f.choice(at, {"f64", "f32", "f16", "bf16", "i64", "i32"}));
}

// keep: {A: {lo: 0.25, hi: 0.5}, B: [[0, 1], [2, 3]]}: per input tensor,
// the hash rule or the explicit list of kept (row, col) positions.
}  // namespace

Keep read_keep(const Fields& parent, const Field& f) {
  Keep k;
  if (f.value.IsMap()) {
    Fields h = parent.nested(f);
    h.only({"lo", "hi"});
    k.lo = h.real(h.required("lo"));
    k.hi = h.real(h.required("hi"));
    if (!(k.lo >= 0 && k.lo <= k.hi && k.hi <= 1)) h.fail(h.required("lo"), "expected 0 <= lo <= hi <= 1");
    return k;
  }
  if (!f.value.IsSequence()) parent.fail(f, "expected {lo, hi} or a list of [row, col] positions");
  if (f.value.size() > size_t(Keep::kMaxListed))
    parent.fail(f, "at most " + std::to_string(Keep::kMaxListed) + " kept positions");
  k.listed = 0;
  for (size_t i = 0; i < f.value.size(); ++i) {
    const YAML::Node& e = f.value[i];
    Field at{f.key + "[" + std::to_string(i) + "]", e, e.Mark().line + 1};
    if (!e.IsSequence() || e.size() != 2) parent.fail(at, "expected [row, col]");
    Field r{at.key + "[0]", e[0], at.line}, c{at.key + "[1]", e[1], at.line};
    // A position outside the tensor keeps nothing; it is allowed so that a
    // case whose dims moved after its list was made still reads back.
    uint64_t row = uint64_t(parent.integer(r, 0, (int64_t(1) << 32) - 1));
    uint64_t col = uint64_t(parent.integer(c, 0, kMaxDim - 1));
    k.at[k.listed++] = keep_position(row, col);
  }
  return k;
}

namespace {

std::string keep_yaml(const Keep& k) {
  if (k.listed < 0) return fmt::format("{{lo: {}, hi: {}}}", k.lo, k.hi);
  std::vector<std::string> at;
  for (int i = 0; i < k.listed; ++i) at.push_back(fmt::format("[{}, {}]", k.at[i] >> 32, k.at[i] & 0xffffffffu));
  return "[" + fmt::format("{}", fmt::join(at, ", ")) + "]";
}

// Short form for describe(): "A=3@(0,1)(2,3)(4,0)" or "B=h[0.25,0.5)".
std::string keep_text(const Keep& k) {
  if (k.listed < 0) return fmt::format("h[{},{})", k.lo, k.hi);
  std::string s = std::to_string(k.listed) + "@";
  for (int i = 0; i < k.listed; ++i) s += fmt::format("({},{})", k.at[i] >> 32, k.at[i] & 0xffffffffu);
  return s;
}

std::map<int, LegacyCaseReader>& legacy_readers() {
  static std::map<int, LegacyCaseReader> r;
  return r;
}

std::string dims_text(const std::vector<int64_t>& v) { return fmt::format("{}", fmt::join(v, ",")); }

std::string tensor_text(const CaseTensor& t) {
  std::string s = fmt::format("{}={}[{}:{}]", t.name, name(t.dtype), dims_text(t.shape), dims_text(t.strides));
  if (t.offset != 0) s += fmt::format("+{}", t.offset);
  if (t.role != Role::input) s += fmt::format("/{}", name(t.role));
  return s;
}

std::string tensor_yaml(const CaseTensor& t) {
  return fmt::format("{{role: {}, dtype: {}, shape: [{}], strides: [{}], offset: {}}}", name(t.role), name(t.dtype),
                     fmt::join(t.shape, ", "), fmt::join(t.strides, ", "), t.offset);
}

std::vector<int64_t> read_dims(const Fields& f, const Field& at, int64_t hi) {
  if (!at.value.IsSequence()) f.fail(at, "expected a list of integers");
  if (at.value.size() > size_t(TensorGeom::kMaxDims))
    f.fail(at, fmt::format("at most {} dimensions", TensorGeom::kMaxDims));
  std::vector<int64_t> v;
  for (size_t i = 0; i < at.value.size(); ++i)
    v.push_back(f.integer(Field{at.key + "[" + std::to_string(i) + "]", at.value[i], at.line}, 0, hi));
  return v;
}

CaseTensor read_tensor(const Fields& parent, const Field& at) {
  Fields f = parent.nested(at);
  f.only({"role", "dtype", "shape", "strides", "offset"});
  CaseTensor t;
  t.name = at.key.substr(at.key.rfind('.') + 1);
  t.role = *parse_role(f.choice(f.required("role"), {"input", "output", "inout"}));
  t.dtype = read_dtype(f, f.required("dtype"));
  t.shape = read_dims(f, f.required("shape"), kMaxDim);
  t.strides = read_dims(f, f.required("strides"), kMaxExtent);
  if (t.strides.size() != t.shape.size())
    f.fail(f.required("strides"), fmt::format("{} strides for {} dimensions", t.strides.size(), t.shape.size()));
  t.offset = f.integer(f.required("offset"), 0, kMaxExtent);
  return t;
}

// The version is checked before anything else, so a file from a newer assay
// says so instead of complaining about keys this version does not know.
int check_version(const Fields& top) {
  const Field& v = top.required("assay_case");
  int64_t version = top.integer(v, INT64_MIN, INT64_MAX);
  if (version == kCaseFileVersion) return int(version);
  if (legacy_readers().count(int(version))) return int(version);
  top.fail(v, fmt::format("unsupported case file version {} (this assay reads {}{})", version, kCaseFileVersion,
                          legacy_readers().empty() ? "" : " and older"));
}

void read_common(const Fields& top, Case& c) {
  c.recipe = *parse_recipe(top.choice(top.required("recipe"), {"ints", "uniform", "mixed", "specials", "offset"}));
  c.seed = top.uint64(top.required("seed"));
  if (auto* f = top.optional("origin")) {
    if (!f->value.IsScalar()) top.fail(*f, "expected a string");
    c.origin = f->value.Scalar();
  }
}

LoadedCase read_case(const Fields& top, const fs::path& base_dir) {
  const int version = check_version(top);
  LoadedCase out;
  if (auto* f = top.optional("spec")) {
    fs::path p = top.string(*f);
    out.spec = (p.is_relative() && !base_dir.empty() ? base_dir / p : p).lexically_normal();
  }
  Case& c = out.c;
  if (version != kCaseFileVersion) {
    c = legacy_readers().at(version)(top);
    read_common(top, c);
    return out;
  }
  top.only({"assay_case", "op", "spec", "sizes", "tensors", "scalars", "recipe", "seed", "keep", "origin"});
  c.op = top.string(top.required("op"));
  if (auto* f = top.optional("sizes")) {
    const Fields sizes = top.nested(*f);
    for (const Field& s : sizes.all()) c.sizes.push_back({s.key.substr(s.key.rfind('.') + 1), sizes.integer(s, 0, kMaxDim)});
  }
  Fields tensors = top.nested(top.required("tensors"));
  for (const Field& t : tensors.all()) c.tensors.push_back(read_tensor(tensors, t));
  if (c.tensors.empty()) top.fail(top.required("tensors"), "no tensors");
  if (auto* f = top.optional("scalars")) {
    const Fields scalars = top.nested(*f);
    for (const Field& s : scalars.all()) c.scalars.push_back({s.key.substr(s.key.rfind('.') + 1), scalars.real(s)});
  }
  read_common(top, c);
  if (auto* f = top.optional("keep")) {
    Fields kf = top.nested(*f);
    for (const Field& g : kf.all()) {
      const std::string tensor = g.key.substr(g.key.rfind('.') + 1);
      const int i = c.tensor_index(tensor);
      if (i < 0) kf.fail(g, fmt::format("no tensor named '{}'", tensor));
      c.tensors[size_t(i)].keep = read_keep(kf, g);
    }
  }
  return out;
}

// describe()'s tokens, read back.
struct ReproReader {
  std::string_view line;
  [[noreturn]] void fail(std::string_view token, const std::string& why) const {
    throw InputError(fmt::format("repro line: '{}': {}", token, why));
  }
  static int64_t integer(std::string_view s, bool& ok) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    ok = ec == std::errc() && p == s.data() + s.size();
    return v;
  }
  static double real(std::string_view s, bool& ok) {
    std::string text(s);
    char* end = nullptr;
    double v = std::strtod(text.c_str(), &end);
    ok = !text.empty() && end == text.c_str() + text.size();
    return v;
  }
  std::vector<int64_t> dims(std::string_view token, std::string_view s) const {
    std::vector<int64_t> v;
    if (s.empty()) return v;
    for (size_t at = 0; at <= s.size();) {
      size_t comma = s.find(',', at);
      if (comma == std::string_view::npos) comma = s.size();
      bool ok = false;
      v.push_back(integer(s.substr(at, comma - at), ok));
      if (!ok || v.back() < 0) fail(token, "expected non-negative integers");
      at = comma + 1;
    }
    return v;
  }
  CaseTensor tensor(std::string_view token) const {
    CaseTensor t;
    const size_t eq = token.find('='), open = token.find('['), colon = token.find(':'), close = token.find(']');
    if (eq == std::string_view::npos || open < eq || colon < open || close < colon) fail(token, "not a tensor");
    t.name = std::string(token.substr(0, eq));
    auto dt = parse_dtype(token.substr(eq + 1, open - eq - 1));
    if (!dt) fail(token, "unknown dtype");
    t.dtype = *dt;
    t.shape = dims(token, token.substr(open + 1, colon - open - 1));
    t.strides = dims(token, token.substr(colon + 1, close - colon - 1));
    if (t.shape.size() != t.strides.size() || t.shape.size() > size_t(TensorGeom::kMaxDims))
      fail(token, "shape and strides differ in length");
    std::string_view rest = token.substr(close + 1);
    if (!rest.empty() && rest[0] == '+') {
      size_t slash = rest.find('/');
      bool ok = false;
      t.offset = integer(rest.substr(1, slash == std::string_view::npos ? rest.size() - 1 : slash - 1), ok);
      if (!ok || t.offset < 0) fail(token, "bad offset");
      rest = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
    }
    if (!rest.empty()) {
      auto role = rest[0] == '/' ? parse_role(rest.substr(1)) : std::nullopt;
      if (!role) fail(token, "bad role");
      t.role = *role;
    }
    return t;
  }
  // "3@(0,1)(2,3)" or "h[0.25,0.5)"
  Keep keep(std::string_view token, std::string_view s) const {
    Keep k;
    bool ok = true;
    if (s.size() > 2 && s[0] == 'h' && s[1] == '[' && s.back() == ')') {
      const size_t comma = s.find(',');
      if (comma == std::string_view::npos) fail(token, "bad keep interval");
      k.lo = real(s.substr(2, comma - 2), ok);
      bool ok2 = false;
      k.hi = real(s.substr(comma + 1, s.size() - comma - 2), ok2);
      if (!ok || !ok2) fail(token, "bad keep interval");
      return k;
    }
    const size_t at = s.find('@');
    if (at == std::string_view::npos) fail(token, "bad keep");
    const int64_t n = integer(s.substr(0, at), ok);
    if (!ok || n < 0 || n > Keep::kMaxListed) fail(token, "bad keep count");
    k.listed = 0;
    std::string_view rest = s.substr(at + 1);
    while (!rest.empty()) {
      const size_t close = rest.find(')'), comma = rest.find(',');
      if (rest[0] != '(' || close == std::string_view::npos || comma > close) fail(token, "bad keep position");
      bool ok_r = false, ok_c = false;
      const int64_t r = integer(rest.substr(1, comma - 1), ok_r), c = integer(rest.substr(comma + 1, close - comma - 1), ok_c);
      if (!ok_r || !ok_c || r < 0 || c < 0 || k.listed == Keep::kMaxListed) fail(token, "bad keep position");
      k.at[k.listed++] = keep_position(uint64_t(r), uint64_t(c));
      rest = rest.substr(close + 1);
    }
    if (k.listed != n) fail(token, "keep count differs from its positions");
    return k;
  }
};

}  // namespace

std::string_view name(Role r) {
  switch (r) {
    case Role::input: return "input";
    case Role::output: return "output";
    case Role::inout: return "inout";
  }
  return "?";
}

std::optional<Role> parse_role(std::string_view s) {
  for (Role r : {Role::input, Role::output, Role::inout})
    if (name(r) == s) return r;
  return std::nullopt;
}

TensorGeom CaseTensor::geom() const {
  TensorGeom g;
  g.dtype = dtype;
  g.ndim = int32_t(shape.size());
  for (size_t d = 0; d < shape.size() && d < size_t(TensorGeom::kMaxDims); ++d)
    g.shape[d] = shape[d], g.strides[d] = d < strides.size() ? strides[d] : 0;
  g.offset = offset;
  return g;
}

void check_layouts(const Case& c) {
  for (const CaseTensor& t : c.tensors) {
    if (t.shape.size() > size_t(TensorGeom::kMaxDims) || t.strides.size() != t.shape.size()) continue;  // the op's check
    const TensorGeom g = t.geom();
    if (g.overlaps())
      throw InputError(fmt::format("tensor {}: its strides [{}] make distinct elements share memory (only a stride "
                                   "of 0, a broadcast, may)", t.name, fmt::join(t.strides, ", ")));
    if (t.role != Role::input && g.broadcasts())
      throw InputError(fmt::format("tensor {}: an {} cannot broadcast (a stride of 0 in [{}])", t.name, name(t.role),
                                   fmt::join(t.strides, ", ")));
  }
}

int64_t Case::size(std::string_view n) const {
  for (auto& s : sizes)
    if (s.name == n) return s.value;
  throw std::out_of_range("case has no size " + std::string(n));
}
double Case::scalar(std::string_view n) const {
  for (auto& s : scalars)
    if (s.name == n) return s.value;
  throw std::out_of_range("case has no scalar " + std::string(n));
}
int64_t* Case::find_size(std::string_view n) {
  for (auto& s : sizes)
    if (s.name == n) return &s.value;
  return nullptr;
}
double* Case::find_scalar(std::string_view n) {
  for (auto& s : scalars)
    if (s.name == n) return &s.value;
  return nullptr;
}
int Case::tensor_index(std::string_view n) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == n) return int(i);
  return -1;
}
const CaseTensor& Case::tensor(std::string_view n) const {
  const int i = tensor_index(n);
  if (i < 0) throw std::out_of_range("case has no tensor " + std::string(n));
  return tensors[size_t(i)];
}
CaseTensor& Case::tensor(std::string_view n) {
  const int i = tensor_index(n);
  if (i < 0) throw std::out_of_range("case has no tensor " + std::string(n));
  return tensors[size_t(i)];
}
int Case::num_inputs() const {
  int n = 0;
  while (n < int(tensors.size()) && tensors[size_t(n)].role == Role::input) ++n;
  return n;
}

bool register_legacy_case_reader(int version, LegacyCaseReader reader) {
  legacy_readers()[version] = std::move(reader);
  return true;
}

std::string describe(const Case& c) {
  std::string s = c.op;
  for (auto& z : c.sizes) s += fmt::format(" {}={}", z.name, z.value);
  for (auto& t : c.tensors) s += " " + tensor_text(t);
  // fmt's "{}" for double is the shortest text that reads back to the same bits.
  for (auto& z : c.scalars) s += fmt::format(" {}={}", z.name, z.value);
  s += fmt::format(" {} seed={}", name(c.recipe), c.seed);
  std::string keep;
  for (auto& t : c.tensors)
    if (!t.keep.all()) keep += fmt::format(" {}={}", t.name, keep_text(t.keep));
  if (!keep.empty()) s += " keep" + keep;
  return s;
}

Case parse_repro(std::string_view line) {
  ReproReader rd{line};
  std::vector<std::string_view> tokens;
  for (size_t at = 0; at < line.size();) {
    while (at < line.size() && line[at] == ' ') ++at;
    size_t end = line.find(' ', at);
    if (end == std::string_view::npos) end = line.size();
    if (end > at) tokens.push_back(line.substr(at, end - at));
    at = end;
  }
  if (tokens.empty()) throw InputError("repro line: empty");
  Case c;
  c.op = std::string(tokens[0]);
  bool seen_tensor = false, seen_seed = false, in_keep = false, seen_recipe = false;
  for (size_t i = 1; i < tokens.size(); ++i) {
    std::string_view t = tokens[i];
    if (t == "keep") {
      in_keep = true;
      continue;
    }
    const size_t eq = t.find('=');
    if (in_keep) {
      if (eq == std::string_view::npos) rd.fail(t, "expected TENSOR=KEEP");
      const int k = c.tensor_index(t.substr(0, eq));
      if (k < 0) rd.fail(t, "no such tensor");
      c.tensors[size_t(k)].keep = rd.keep(t, t.substr(eq + 1));
      continue;
    }
    if (t.find('[') != std::string_view::npos && !seen_seed) {
      c.tensors.push_back(rd.tensor(t));
      seen_tensor = true;
      continue;
    }
    if (eq == std::string_view::npos) {
      auto r = parse_recipe(t);
      if (!r) rd.fail(t, "unknown token");
      c.recipe = *r, seen_recipe = true;
      continue;
    }
    const std::string_view key = t.substr(0, eq), value = t.substr(eq + 1);
    bool ok = false;
    if (key == "seed" && seen_recipe) {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), c.seed);
      if (ec != std::errc() || p != value.data() + value.size()) rd.fail(t, "bad seed");
      seen_seed = true;
    } else if (!seen_tensor) {
      const int64_t v = ReproReader::integer(value, ok);
      if (!ok || v < 0) rd.fail(t, "expected a size");
      c.sizes.push_back({std::string(key), v});
    } else {
      const double v = ReproReader::real(value, ok);
      if (!ok) rd.fail(t, "expected a number");
      c.scalars.push_back({std::string(key), v});
    }
  }
  if (c.tensors.empty() || !seen_seed) throw InputError("repro line: needs tensors, a recipe and seed=N");
  return c;
}

std::string to_yaml(const Case& c, const fs::path& spec_path, const fs::path& case_dir) {
  std::string y = fmt::format("assay_case: {}\n", kCaseFileVersion);
  y += fmt::format("op: {}\n", yaml_string(c.op));
  if (!spec_path.empty()) y += fmt::format("spec: {}\n", yaml_string(spec_text(spec_path, case_dir)));
  if (!c.sizes.empty()) {
    std::vector<std::string> s;
    for (auto& z : c.sizes) s.push_back(fmt::format("{}: {}", z.name, z.value));
    y += fmt::format("sizes: {{{}}}\n", fmt::join(s, ", "));
  }
  y += "tensors:\n";
  for (auto& t : c.tensors) y += fmt::format("  {}: {}\n", yaml_string(t.name), tensor_yaml(t));
  if (!c.scalars.empty()) {
    std::vector<std::string> s;
    // fmt's "{}" for double is the shortest text that reads back to the same bits.
    for (auto& z : c.scalars) s.push_back(fmt::format("{}: {}", z.name, z.value));
    y += fmt::format("scalars: {{{}}}\n", fmt::join(s, ", "));
  }
  y += fmt::format("recipe: {}\nseed: {}\n", name(c.recipe), c.seed);
  std::vector<std::string> keep;
  for (auto& t : c.tensors)
    if (!t.keep.all()) keep.push_back(fmt::format("{}: {}", yaml_string(t.name), keep_yaml(t.keep)));
  if (!keep.empty()) y += fmt::format("keep: {{{}}}\n", fmt::join(keep, ", "));
  if (!c.origin.empty()) y += fmt::format("origin: {}\n", yaml_quoted(c.origin));
  return y;
}

LoadedCase parse_case_yaml(const std::string& text, const std::string& origin_name, const fs::path& base_dir) {
  YAML::Node root = yaml_input::load_mapping(text, origin_name);
  try {
    return read_case(Fields(origin_name, root), base_dir);
  } catch (const YAML::Exception& e) {  // not expected: yaml-cpp already parsed it
    throw InputError(origin_name + ": malformed YAML: " + e.msg);
  }
}

LoadedCase load_case_file(const fs::path& file) {
  return parse_case_yaml(yaml_input::read_file(file), file.string(), file.parent_path());
}

}  // namespace assay
