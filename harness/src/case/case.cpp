// Case files: a Case written as YAML and read back bit for bit. Numbers are
// printed in their shortest round-trip form, so a saved case regenerates the
// exact same inputs.
#include "case/case.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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

std::string layout_text(DType t, const Layout& l) {
  std::string s = fmt::format("{}[{},{}]", name(t), l.row_stride, l.col_stride);
  if (l.offset != 0) s += fmt::format("+{}", l.offset);
  return s;
}

std::string layout_yaml(const Layout& l) {
  return fmt::format("{{row_stride: {}, col_stride: {}, offset: {}}}", l.row_stride, l.col_stride, l.offset);
}

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

DType read_dtype(const Fields& f, std::string_view key) {
  return *parse_dtype(f.choice(f.required(key), {"f64", "f32", "f16", "bf16"}));
}

Layout read_layout(const Fields& parent, std::string_view key) {
  Fields f = parent.nested(parent.required(key));
  f.only({"row_stride", "col_stride", "offset"});
  Layout l;
  l.row_stride = f.integer(f.required("row_stride"), 0, kMaxExtent);
  l.col_stride = f.integer(f.required("col_stride"), 0, kMaxExtent);
  l.offset = f.integer(f.required("offset"), 0, kMaxExtent);
  return l;
}

// keep: {a: {lo: 0.25, hi: 0.5}, b: [[0, 1], [2, 3]]}: per input tensor,
// the hash rule or the explicit list of kept (row, col) positions.
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
    uint64_t row = uint64_t(parent.integer(r, 0, kMaxDim - 1));
    uint64_t col = uint64_t(parent.integer(c, 0, kMaxDim - 1));
    k.at[k.listed++] = keep_position(row, col);
  }
  return k;
}

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

void read_types_and_layouts(const Fields& top, Case& c) {
  Fields d = top.nested(top.required("dtypes"));
  d.only({"a", "b", "c"});
  c.a_type = read_dtype(d, "a");
  c.b_type = read_dtype(d, "b");
  c.c_type = read_dtype(d, "c");
  Fields l = top.nested(top.required("layout"));
  l.only({"a", "b", "c"});
  c.a = read_layout(l, "a");
  c.b = read_layout(l, "b");
  c.c = read_layout(l, "c");
}

// The version is checked before anything else, so a file from a newer assay
// says so instead of complaining about keys this version does not know.
void check_version(const Fields& top) {
  const Field& v = top.required("assay_case");
  int64_t version = top.integer(v, INT64_MIN, INT64_MAX);
  if (version != 1) top.fail(v, "unsupported case file version " + std::to_string(version) + " (this assay reads 1)");
}

LoadedCase read_case(const Fields& top, const fs::path& base_dir) {
  check_version(top);
  top.only({"assay_case", "op", "spec", "m", "n", "k", "dtypes", "layout", "alpha", "beta", "recipe", "seed",
            "keep", "origin"});
  LoadedCase out;
  Case& c = out.c;
  if (auto* f = top.optional("op")) {
    c.op = top.string(*f);
    if (c.op != "gemm") top.fail(*f, "unknown op " + yaml_input::quote(c.op) + " (known: gemm)");
  }
  if (auto* f = top.optional("spec")) {
    fs::path p = top.string(*f);
    out.spec = (p.is_relative() && !base_dir.empty() ? base_dir / p : p).lexically_normal();
  }
  c.m = top.integer(top.required("m"), 0, kMaxDim);
  c.n = top.integer(top.required("n"), 0, kMaxDim);
  c.k = top.integer(top.required("k"), 0, kMaxDim);
  read_types_and_layouts(top, c);
  c.alpha = top.real(top.required("alpha"));
  c.beta = top.real(top.required("beta"));
  c.recipe = *parse_recipe(top.choice(top.required("recipe"), {"ints", "uniform", "mixed", "specials"}));
  c.seed = top.uint64(top.required("seed"));
  if (auto* f = top.optional("keep")) {
    Fields kf = top.nested(*f);
    kf.only({"a", "b", "c"});
    for (int t = 0; t < 3; ++t)
      if (auto* g = kf.optional(std::string_view("abc" + t, 1))) c.keep[t] = read_keep(kf, *g);
  }
  if (auto* f = top.optional("origin")) {
    if (!f->value.IsScalar()) top.fail(*f, "expected a string");
    c.origin = f->value.Scalar();
  }
  return out;
}

}  // namespace

std::string describe(const Case& c) {
  std::string keep;
  for (int t = 0; t < 3; ++t)
    if (!c.keep[t].all()) keep += fmt::format("{}{}={}", keep.empty() ? " keep " : " ", "ABC"[t], keep_text(c.keep[t]));
  return fmt::format("{} m={} n={} k={} A={} B={} C={} alpha={} beta={} {} seed={}{}", c.op, c.m, c.n, c.k,
                     layout_text(c.a_type, c.a), layout_text(c.b_type, c.b), layout_text(c.c_type, c.c), c.alpha,
                     c.beta, name(c.recipe), c.seed, keep);
}

std::string to_yaml(const Case& c, const fs::path& spec_path, const fs::path& case_dir) {
  std::string y = "assay_case: 1\n";
  y += fmt::format("op: {}\n", yaml_string(c.op));
  if (!spec_path.empty()) y += fmt::format("spec: {}\n", yaml_string(spec_text(spec_path, case_dir)));
  y += fmt::format("m: {}\nn: {}\nk: {}\n", c.m, c.n, c.k);
  y += fmt::format("dtypes: {{a: {}, b: {}, c: {}}}\n", name(c.a_type), name(c.b_type), name(c.c_type));
  y += "layout:\n";
  y += fmt::format("  a: {}\n  b: {}\n  c: {}\n", layout_yaml(c.a), layout_yaml(c.b), layout_yaml(c.c));
  // fmt's "{}" for double is the shortest text that reads back to the same bits.
  y += fmt::format("alpha: {}\nbeta: {}\n", c.alpha, c.beta);
  y += fmt::format("recipe: {}\nseed: {}\n", name(c.recipe), c.seed);
  std::vector<std::string> keep;
  for (int t = 0; t < 3; ++t)
    if (!c.keep[t].all()) keep.push_back(fmt::format("{}: {}", "abc"[t], keep_yaml(c.keep[t])));
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
