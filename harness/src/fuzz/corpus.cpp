#include "fuzz/corpus.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "case/case.h"
#include "case/rng.h"
#include "core/error.h"

namespace assay::fuzz {
namespace fs = std::filesystem;
namespace {

std::vector<fs::path> sorted_files(const fs::path& dir, bool yaml) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && (e.path().extension() == ".yaml") == yaml) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_all(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t content_hash(const std::string& s) {
  uint64_t h = 0x6a09e667f3bcc908ull;
  for (unsigned char ch : s) h = mix64(h ^ ch);
  return mix64(h ^ s.size());
}

// The identity of a case for deduplication: everything that makes its inputs.
std::string case_key(Case c) {
  c.origin.clear();
  return to_yaml(c);
}

// A free name in dir: the original one, or one with the content hash added.
fs::path free_name(const fs::path& dir, const fs::path& name, uint64_t hash) {
  fs::path p = dir / name;
  if (!fs::exists(p)) return p;
  return dir / fmt::format("{}-{:016x}{}", name.stem().string(), hash, name.extension().string());
}

// The comment lines of a saved case (verdict, detail), without the stale repro path.
std::string kept_comments(const std::string& text) {
  std::string out, line;
  std::istringstream in(text);
  while (std::getline(in, line))
    if (line.rfind("#", 0) == 0 && line.rfind("# repro:", 0) != 0) out += line + "\n";
  return out;
}

// "one/", "./one" and "one" all name kernel "one".
std::string dir_name(const fs::path& p) {
  fs::path n = fs::absolute(p).lexically_normal();
  return (n.filename().empty() ? n.parent_path() : n).filename().string();
}

}  // namespace

CorpusKind corpus_kind(const fs::path& dir) {
  if (!sorted_files(dir, true).empty()) return CorpusKind::regression;
  if (fs::is_directory(dir))
    for (auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && !sorted_files(e.path(), true).empty()) return CorpusKind::regression;
  return sorted_files(dir, false).empty() ? CorpusKind::empty : CorpusKind::fuzz;
}

MergeCount merge_cases(const fs::path& out, const std::vector<fs::path>& ins) {
  // kernel -> its case files, from every input (a folder of case files is one kernel).
  std::map<std::string, std::vector<fs::path>> by_kernel;
  for (const fs::path& in : ins) {
    for (auto& f : sorted_files(in, true)) by_kernel[dir_name(in)].push_back(f);
    std::vector<fs::path> subs;
    for (auto& e : fs::directory_iterator(in))
      if (e.is_directory()) subs.push_back(e.path());
    std::sort(subs.begin(), subs.end());
    for (auto& d : subs)
      for (auto& f : sorted_files(d, true)) by_kernel[d.filename().string()].push_back(f);
  }
  MergeCount n;
  for (auto& [kernel, files] : by_kernel) {
    const fs::path dir = out / kernel;
    std::set<std::string> have;
    for (auto& f : sorted_files(dir, true)) have.insert(case_key(load_case_file(f).c));
    for (auto& f : files) {
      if (fs::exists(dir / f.filename()) && fs::equivalent(dir / f.filename(), f)) continue;  // out is an input
      ++n.seen;
      LoadedCase lc = load_case_file(f);  // a broken file is bad input: the error names it
      std::string key = case_key(lc.c);
      if (!have.insert(key).second) {
        ++n.duplicates;
        continue;
      }
      fs::create_directories(dir);
      fs::path to = free_name(dir, f.filename(), content_hash(key));
      std::ofstream(to) << kept_comments(read_all(f))
                        << to_yaml(lc.c, lc.spec.empty() ? lc.spec : fs::absolute(lc.spec), fs::absolute(dir));
      ++n.added;
    }
  }
  return n;
}

MergeCount merge_by_content(const fs::path& out, const std::vector<fs::path>& ins) {
  fs::create_directories(out);
  std::set<uint64_t> have;
  for (auto& f : sorted_files(out, false)) have.insert(content_hash(read_all(f)));
  MergeCount n;
  for (const fs::path& in : ins) {
    for (auto& f : sorted_files(in, false)) {
      ++n.seen;
      std::string bytes = read_all(f);
      uint64_t h = content_hash(bytes);
      if (!have.insert(h).second) {
        ++n.duplicates;
        continue;
      }
      std::ofstream(free_name(out, f.filename(), h), std::ios::binary) << bytes;
      ++n.added;
    }
  }
  return n;
}

void seed_fuzz_corpus(const fs::path& dir, const Op& op, const Spec& spec, const CodecLimits& lim) {
  if (!fs::is_empty(dir)) return;
  int i = 0;
  for (const Case& c : op.seed_cases(spec)) {
    auto bytes = op.encode(c, lim);
    std::ofstream(dir / ("seed-" + std::to_string(i++)), std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
}

}  // namespace assay::fuzz
