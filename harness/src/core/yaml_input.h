// Strict reading of the small YAML files users write (specs, case files):
// size and NUL-byte limits, yaml-cpp exceptions turned into InputError, and
// typed access to mapping fields with "FILE:LINE: key 'X': problem" messages.
// Private to the spec and case readers.
#pragma once
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace assay::yaml_input {

inline constexpr size_t kMaxFileBytes = size_t(1) << 20;

// Reads a whole file; InputError if it is missing, not a regular file or
// larger than kMaxFileBytes.
std::string read_file(const std::filesystem::path& file);

// Parses text holding exactly one YAML document whose top level is a
// mapping. `file` names the input in messages.
YAML::Node load_mapping(const std::string& text, const std::string& file);

// Printable, shortened form of untrusted text for messages: 'abc'.
std::string quote(std::string_view s, size_t max_chars = 60);

struct Field {
  std::string key;   // dotted path, e.g. "dtypes.a"
  YAML::Node value;
  int line = 1;      // 1-based line of the key
};

// The entries of one mapping. Keys must be scalars and unique.
class Fields {
 public:
  Fields(std::string file, const YAML::Node& map, std::string prefix = "");

  // InputError for the first key not in `allowed`.
  void only(std::initializer_list<std::string_view> allowed) const;
  void only(const std::vector<std::string_view>& allowed) const;
  const std::vector<Field>& all() const { return fields_; }
  const Field* optional(std::string_view key) const;
  const Field& required(std::string_view key) const;  // InputError if absent

  [[noreturn]] void fail(const Field& f, const std::string& problem) const;
  [[noreturn]] void fail_at(int line, const std::string& key, const std::string& problem) const;

  std::string string(const Field& f) const;  // any non-empty scalar
  std::string choice(const Field& f, std::initializer_list<std::string_view> allowed) const;
  int64_t integer(const Field& f, int64_t lo, int64_t hi) const;
  uint64_t uint64(const Field& f) const;
  double real(const Field& f) const;  // finite
  bool boolean(const Field& f) const;
  // A list of non-empty strings; with `scalar_ok`, a single string is a list of one.
  std::vector<std::pair<std::string, int>> strings(const Field& f, bool scalar_ok = false) const;
  Fields nested(const Field& f) const;  // the field's value must be a mapping

  const std::string& file() const { return file_; }
  int line() const { return line_; }  // the mapping's own line

 private:
  std::string file_, prefix_;
  int line_ = 1;
  std::vector<Field> fields_;
  std::string scalar_text(const Field& f, std::string_view expected) const;
};

}  // namespace assay::yaml_input
