// The benchmarks' command lines: `--name value` pairs, nothing else. A name
// the program does not know, a name without its value, --help, or an error
// while it runs (no GPU, a missing spec) ends it with a message and an exit
// code, never an uncaught exception's abort.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

namespace assay::bench_cli {

// Exit codes: 0 done, 2 a bad command line, 3 the run could not be made.
inline constexpr int kUsage = 2, kFailed = 3;

struct Options {
  std::map<std::string, std::string> given;  // name (with its dashes) -> value
  bool ok = true;                            // false: print the usage and exit kUsage
  // The value given for `name`, or `fallback` where none was.
  std::string value(const std::string& name, const std::string& fallback) const {
    const auto it = given.find(name);
    return it == given.end() ? fallback : it->second;
  }
};

// Reads argv[1..] as `--name value` pairs, each name one of `known`.
inline Options parse_options(int argc, char** argv, std::initializer_list<const char*> known) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string name = argv[i];
    bool listed = false;
    for (const char* k : known) listed |= name == k;
    if (!listed || i + 1 >= argc) {
      if (name != "--help" && name != "-h")
        std::fprintf(stderr, "%s: %s\n", argv[0], listed ? ("missing the value of " + name).c_str()
                                                         : ("unknown option " + name).c_str());
      o.ok = false;
      return o;
    }
    o.given[name] = argv[i + 1];
  }
  return o;
}

// `text` as a whole number or a decimal, nothing after it; false if not.
inline bool read_number(const std::string& text, double& value) {
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !text.empty() && end && *end == 0;
}

// `text` as a whole decimal number, nothing after it; false if not.
inline bool read_whole(const std::string& text, long long& value) {
  char* end = nullptr;
  value = std::strtoll(text.c_str(), &end, 10);
  return !text.empty() && end && *end == 0;
}

// Runs `body`, turning what it throws into a message and kFailed.
inline int guarded(const char* program, const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return kFailed;
  }
}

// The source tree whose sample specs a bench reads by default: ASSAY_SOURCE_DIR
// from the environment (a copy of the tree on another machine, as the tests
// take it: tests/samples_support.h), else the tree it was built from.
inline std::filesystem::path source_dir() {
  const char* env = std::getenv("ASSAY_SOURCE_DIR");
  return env && *env ? std::filesystem::path(env) : std::filesystem::path(ASSAY_SOURCE_DIR);
}

}  // namespace assay::bench_cli
