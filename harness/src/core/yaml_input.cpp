#include "core/yaml_input.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <system_error>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include "core/error.h"

namespace assay::yaml_input {
namespace {

namespace fs = std::filesystem;

int line_of(const YAML::Mark& m) { return m.is_null() || m.line < 0 ? 1 : m.line + 1; }

[[noreturn]] void fail_file(const std::string& file, const std::string& problem) {
  throw InputError(file + ": " + problem);
}
[[noreturn]] void fail_line(const std::string& file, int line, const std::string& problem) {
  throw InputError(file + ":" + std::to_string(line) + ": " + problem);
}

std::string kind_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "a string";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "an undefined node";
  }
}

template <class Names>
std::string join(const Names& names) {
  std::string out;
  for (auto n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// Refuses what yaml-cpp should never see: oversized text and NUL bytes
// (which would silently cut a string short in some paths).
void check_text(const std::string& text, const std::string& file) {
  if (text.size() > kMaxFileBytes)
    fail_file(file, "larger than 1 MiB (" + std::to_string(text.size()) + " bytes); not a spec or case file");
  size_t nul = text.find('\0');
  if (nul == std::string::npos) return;
  int line = 1 + int(std::count(text.begin(), text.begin() + std::ptrdiff_t(nul), '\n'));
  size_t line_start = text.rfind('\n', nul);
  size_t column = line_start == std::string::npos ? nul + 1 : nul - line_start;
  fail_line(file, line, "NUL byte at column " + std::to_string(column) + "; the file must be text");
}

}  // namespace

std::string quote(std::string_view s, size_t max_chars) {
  std::string out = "'";
  size_t n = std::min(s.size(), max_chars);
  for (size_t i = 0; i < n; ++i) {
    unsigned char ch = static_cast<unsigned char>(s[i]);
    if (ch >= 0x20 && ch != 0x7f) {
      out += char(ch);
    } else {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[ch >> 4];
      out += hex[ch & 15];
    }
  }
  return out + (s.size() > n ? "...'" : "'");
}

std::string read_file(const fs::path& file) {
  const std::string name = file.string();
  std::error_code ec;
  auto status = fs::status(file, ec);
  if (ec || !fs::exists(status)) fail_file(name, "cannot read: no such file");
  if (!fs::is_regular_file(status)) fail_file(name, "cannot read: not a regular file");
  std::ifstream in(file, std::ios::binary);
  if (!in) fail_file(name, "cannot open for reading");
  // Read at most one byte past the limit, so a huge file is never loaded.
  std::string text(kMaxFileBytes + 1, '\0');
  in.read(text.data(), std::streamsize(text.size()));
  text.resize(size_t(in.gcount()));
  if (in.bad()) fail_file(name, "read error");
  if (text.size() > kMaxFileBytes) fail_file(name, "larger than 1 MiB; not a spec or case file");
  return text;
}

namespace {

// Watches the root of each document yaml-cpp reports. A root that is null at
// the very position where its document starts means the parser consumed
// nothing: a stray token such as a top-level ','. yaml-cpp 0.7 then reports
// the same empty document forever, which is why YAML::LoadAll hangs there
// (jbeder/yaml-cpp#1040); load_mapping() never asks for more than two.
struct DocumentScan : YAML::EventHandler {
  YAML::Mark start;
  bool at_root = false, stuck = false;

  void OnDocumentStart(const YAML::Mark& m) override {
    start = m;
    at_root = true;
    stuck = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override {
    if (at_root && m.pos == start.pos) stuck = true;
    at_root = false;
  }
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override { at_root = false; }
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {
    at_root = false;
  }
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    at_root = false;
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    at_root = false;
  }
  void OnMapEnd() override {}
};

// Fails unless the text holds exactly one document that yaml-cpp can build.
void check_documents(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentScan scan;
  if (!parser.HandleNextDocument(scan)) fail_line(file, 1, "the file is empty");
  auto unexpected = [&] { return quote(std::string_view(text).substr(size_t(scan.start.pos), 1)); };
  if (scan.stuck) fail_line(file, line_of(scan.start), "YAML syntax error: unexpected " + unexpected());
  if (!parser.HandleNextDocument(scan)) return;
  if (scan.stuck)
    fail_line(file, line_of(scan.start), "YAML syntax error: unexpected " + unexpected() + " after the document");
  fail_line(file, line_of(scan.start), "more than one YAML document");
}

}  // namespace

YAML::Node load_mapping(const std::string& text, const std::string& file) {
  check_text(text, file);
  YAML::Node root;
  try {
    check_documents(text, file);
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    fail_line(file, line_of(e.mark), "YAML nested too deeply");
  } catch (const YAML::Exception& e) {
    fail_line(file, line_of(e.mark), "YAML syntax error: " + e.msg);
  }
  if (root.IsNull()) fail_line(file, 1, "the file is empty");
  if (!root.IsMap()) fail_line(file, line_of(root.Mark()), "expected a mapping of keys, found " + kind_name(root));
  return root;
}

Fields::Fields(std::string file, const YAML::Node& map, std::string prefix)
    : file_(std::move(file)), prefix_(std::move(prefix)), line_(line_of(map.Mark())) {
  // Copies, not references: yaml-cpp's iterator yields temporaries.
  for (const auto& kv : map) {
    YAML::Node k = kv.first;
    int line = line_of(k.Mark());
    if (!k.IsScalar()) fail_line(file_, line, "keys must be plain names, found " + kind_name(k));
    std::string key = prefix_ + k.Scalar();
    if (optional(k.Scalar())) fail_at(line, key, "duplicate key");
    fields_.push_back({std::move(key), kv.second, line});
  }
}

void Fields::only(std::initializer_list<std::string_view> allowed) const {
  only(std::vector<std::string_view>(allowed));
}

void Fields::only(const std::vector<std::string_view>& allowed) const {
  for (const Field& f : fields_) {
    std::string_view bare = std::string_view(f.key).substr(prefix_.size());
    if (std::find(allowed.begin(), allowed.end(), bare) == allowed.end())
      fail_at(f.line, f.key, "unknown key (allowed: " + join(allowed) + ")");
  }
}

const Field* Fields::optional(std::string_view key) const {
  for (const Field& f : fields_)
    if (std::string_view(f.key).substr(prefix_.size()) == key) return &f;
  return nullptr;
}

const Field& Fields::required(std::string_view key) const {
  if (const Field* f = optional(key)) return *f;
  fail_at(line_, prefix_ + std::string(key), "missing (required)");
}

void Fields::fail(const Field& f, const std::string& problem) const { fail_at(f.line, f.key, problem); }

void Fields::fail_at(int line, const std::string& key, const std::string& problem) const {
  // The key itself may be hostile text: print it escaped and shortened.
  std::string shown = quote(key);
  throw InputError(file_ + ":" + std::to_string(line) + ": key " + shown + ": " + problem);
}

std::string Fields::scalar_text(const Field& f, std::string_view expected) const {
  if (!f.value.IsScalar()) fail(f, "expected " + std::string(expected) + ", found " + kind_name(f.value));
  return f.value.Scalar();
}

std::string Fields::string(const Field& f) const {
  std::string s = scalar_text(f, "a string");
  if (s.empty()) fail(f, "must not be empty");
  return s;
}

std::string Fields::choice(const Field& f, std::initializer_list<std::string_view> allowed) const {
  std::string s = scalar_text(f, "one of " + join(allowed));
  if (std::find(allowed.begin(), allowed.end(), s) == allowed.end())
    fail(f, "must be one of " + join(allowed) + ", not " + quote(s));
  return s;
}

// Numbers must be plain scalars: `m: "3"` is a string in YAML, and refusing it
// keeps files unambiguous.
int64_t Fields::integer(const Field& f, int64_t lo, int64_t hi) const {
  std::string s = scalar_text(f, "an integer");
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (f.value.Tag() != "?" || s.empty() || ec != std::errc() || p != s.data() + s.size())
    fail(f, "expected an integer, found " + quote(s));
  if (v < lo || v > hi)
    fail(f, std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

uint64_t Fields::uint64(const Field& f) const {
  std::string s = scalar_text(f, "an unsigned integer");
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (f.value.Tag() != "?" || s.empty() || ec != std::errc() || p != s.data() + s.size())
    fail(f, "expected an unsigned 64-bit integer, found " + quote(s));
  return v;
}

double Fields::real(const Field& f) const {
  std::string s = scalar_text(f, "a number");
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (f.value.Tag() != "?" || s.empty() || ec != std::errc() || p != s.data() + s.size())
    fail(f, "expected a finite number, found " + quote(s));
  if (!std::isfinite(v)) fail(f, "must be finite, found " + quote(s));
  return v;
}

bool Fields::boolean(const Field& f) const {
  std::string s = scalar_text(f, "true or false");
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  fail(f, "expected true or false, found " + quote(s));
}

std::vector<std::pair<std::string, int>> Fields::strings(const Field& f, bool scalar_ok) const {
  std::vector<std::pair<std::string, int>> out;
  if (scalar_ok && f.value.IsScalar()) {
    out.emplace_back(string(f), f.line);
    return out;
  }
  if (!f.value.IsSequence())
    fail(f, std::string(scalar_ok ? "expected a string or a list of strings" : "expected a list of strings") +
                ", found " + kind_name(f.value));
  for (const YAML::Node& item : f.value) {
    int line = item.Mark().is_null() ? f.line : line_of(item.Mark());
    if (!item.IsScalar()) fail_at(line, f.key, "list items must be strings, found " + kind_name(item));
    if (item.Scalar().empty()) fail_at(line, f.key, "list items must not be empty");
    out.emplace_back(item.Scalar(), line);
  }
  return out;
}

Fields Fields::nested(const Field& f) const {
  if (!f.value.IsMap()) fail(f, "expected a mapping, found " + kind_name(f.value));
  return Fields(file_, f.value, f.key + ".");
}

}  // namespace assay::yaml_input
