// Reports: the JSON report parses and carries verdicts, expectations and
// repro lines; the JUnit report is well-formed XML with escaped text; saved
// case files read back to the same Case.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gate/gate.h"
#include "ops/gemm/gemm_generator.h"
#include "report/reporter.h"

using namespace assay;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path dir;
  TempDir() {
    std::random_device rd;
    dir = fs::temp_directory_path() / ("assay_test_reports_" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

gemm::Problem sample_problem() {
  gemm::Problem c;
  c.m = 37, c.n = 45, c.k = 29;
  c.a_type = DType::f16, c.b_type = DType::bf16, c.c_type = DType::f32;
  c.a = gemm::make_layout(37, 29, true, 3, 1);
  c.b = gemm::make_layout(29, 45, false, 0, 2);
  c.c = gemm::make_layout(37, 45, false, 5, 0);
  c.alpha = 0.1, c.beta = -1.3;
  c.recipe = Recipe::mixed;
  c.seed = 18446744073709551615ull;
  c.origin = "layout A col-major: \"padded\" # not a comment";
  return c;
}
Case sample_case() { return gemm::to_case(sample_problem()); }

CaseFailure sample_failure(const std::string& detail, const fs::path& case_file) {
  CaseFailure f;
  f.c = sample_case();
  f.outcome.verdict = Verdict::mismatch;
  f.outcome.call = 2;
  f.outcome.detail = detail;
  f.outcome.stats.bad = 3;
  f.outcome.stats.checked = 1665;
  f.outcome.stats.max_ulps = 12;
  f.outcome.stats.first_bad.push_back({gemm::C, 4, 5, 1.5, 1.75, 12, 3.5});
  f.case_file = case_file;
  f.repro = "assay repro " + case_file.string();
  return f;
}

KernelReport failing_kernel(const std::string& name, const std::string& detail) {
  KernelReport k;
  k.name = name;
  k.spec_file = "specs/" + name + ".yaml";
  k.backend = "host";
  k.cases_run = 12, k.cases_passed = 11, k.cases_skipped = 2;
  k.skip_reasons["larger than the host backend takes (large)"] = 2;
  k.failures.push_back(sample_failure(detail, "out/" + name + "/case-0011-mismatch.yaml"));
  k.seconds = 0.25;
  return k;
}

KernelReport passing_kernel() {
  KernelReport k;
  k.name = "good";
  k.spec_file = "specs/good.yaml";
  k.backend = "host";
  k.cases_run = 50, k.cases_passed = 50;
  return k;
}

KernelReport broken_kernel() {
  KernelReport k;
  k.name = "broken";
  k.spec_file = "specs/broken.yaml";
  k.backend = "cuda";
  k.setup_error = "compiling <x> & <y> failed";
  k.setup_exit = 2;
  return k;
}

// --- a small XML well-formedness checker (enough for the JUnit subset) ---

struct XmlElement {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;  // decoded, direct children's text only
  std::vector<int> children;
};

struct XmlDoc {
  std::vector<XmlElement> elems;  // elems[0] is the root
  std::string error;
};

bool decode_entities(const std::string& raw, std::string& out) {
  out.clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    char ch = raw[i];
    if (ch == '<') return false;
    if (ch != '&') {
      out += ch;
      continue;
    }
    size_t semi = raw.find(';', i);
    if (semi == std::string::npos) return false;
    std::string ent = raw.substr(i + 1, semi - i - 1);
    static const std::map<std::string, char> known = {{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'},
                                                      {"apos", '\''}};
    if (auto it = known.find(ent); it != known.end()) out += it->second;
    else if (ent.size() > 1 && ent[0] == '#') out += '?';
    else return false;
    i = semi;
  }
  return true;
}

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == ':'; }

XmlDoc parse_xml(const std::string& s) {
  XmlDoc doc;
  size_t i = 0;
  auto fail = [&](const std::string& why) {
    doc.error = why + " at byte " + std::to_string(i);
    return doc;
  };
  if (s.rfind("<?xml", 0) == 0) {
    i = s.find("?>");
    if (i == std::string::npos) return fail("unterminated declaration");
    i += 2;
  }
  std::vector<int> stack;
  bool root_done = false;
  while (i < s.size()) {
    size_t lt = s.find('<', i);
    std::string raw = s.substr(i, (lt == std::string::npos ? s.size() : lt) - i), text;
    if (!decode_entities(raw, text)) return fail("bad character data '" + raw + "'");
    if (stack.empty()) {
      if (text.find_first_not_of(" \t\r\n") != std::string::npos) return fail("text outside the root");
    } else {
      doc.elems[size_t(stack.back())].text += text;
    }
    if (lt == std::string::npos) break;
    i = lt + 1;
    if (i < s.size() && s[i] == '/') {  // closing tag
      size_t start = ++i;
      while (i < s.size() && name_char(s[i])) ++i;
      std::string name = s.substr(start, i - start);
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size() || s[i] != '>') return fail("bad closing tag");
      ++i;
      if (stack.empty() || doc.elems[size_t(stack.back())].name != name) return fail("mismatched </" + name + ">");
      stack.pop_back();
      if (stack.empty()) root_done = true;
      continue;
    }
    if (root_done) return fail("second root element");
    size_t start = i;
    while (i < s.size() && name_char(s[i])) ++i;
    XmlElement e;
    e.name = s.substr(start, i - start);
    if (e.name.empty()) return fail("empty element name");
    bool self_closing = false;
    while (true) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i >= s.size()) return fail("unterminated tag");
      if (s[i] == '>') { ++i; break; }
      if (s[i] == '/' && i + 1 < s.size() && s[i + 1] == '>') { i += 2; self_closing = true; break; }
      size_t an = i;
      while (i < s.size() && name_char(s[i])) ++i;
      std::string attr = s.substr(an, i - an);
      if (attr.empty() || i >= s.size() || s[i] != '=') return fail("bad attribute");
      ++i;
      if (i >= s.size() || (s[i] != '"' && s[i] != '\'')) return fail("unquoted attribute");
      char q = s[i++];
      size_t end = s.find(q, i);
      if (end == std::string::npos) return fail("unterminated attribute");
      std::string value;
      if (!decode_entities(s.substr(i, end - i), value)) return fail("bad attribute value");
      if (e.attrs.count(attr)) return fail("duplicate attribute " + attr);
      e.attrs[attr] = value;
      i = end + 1;
    }
    int id = int(doc.elems.size());
    if (!stack.empty()) doc.elems[size_t(stack.back())].children.push_back(id);
    doc.elems.push_back(e);
    if (self_closing) {
      if (stack.empty()) root_done = true;
    } else {
      stack.push_back(id);
    }
  }
  if (!stack.empty()) return fail("unclosed <" + doc.elems[size_t(stack.back())].name + ">");
  if (doc.elems.empty()) return fail("no root");
  return doc;
}

std::vector<const XmlElement*> find_all(const XmlDoc& d, const std::string& name) {
  std::vector<const XmlElement*> out;
  for (auto& e : d.elems)
    if (e.name == name) out.push_back(&e);
  return out;
}

}  // namespace

TEST_CASE("the XML checker used here rejects malformed XML", "[reports]") {
  CHECK(parse_xml("<a><b x=\"1\">t &amp; u</b></a>").error.empty());
  CHECK_FALSE(parse_xml("<a><b>t & u</b></a>").error.empty());
  CHECK_FALSE(parse_xml("<a><b>t < u</b></a>").error.empty());
  CHECK_FALSE(parse_xml("<a><b></a></b>").error.empty());
  CHECK_FALSE(parse_xml("<a x=\"<\"></a>").error.empty());
  CHECK_FALSE(parse_xml("<a></a><b></b>").error.empty());
  CHECK_FALSE(parse_xml("<a>").error.empty());
}

TEST_CASE("JSON report parses and carries verdicts, expectations and repro lines", "[reports]") {
  TempDir tmp;
  fs::path file = tmp.dir / "report.json";
  KernelReport bad = failing_kernel("bad_kernel", "3 of 1665 elements bad; \"quoted\" \\ and\nnewline");
  KernelReport expected_bad = failing_kernel("planted", "x");
  expected_bad.expect = "mismatch";
  std::vector<KernelReport> ks = {bad, passing_kernel(), expected_bad, broken_kernel()};
  make_json_reporter(file)->run_done(ks);

  nlohmann::json j = nlohmann::json::parse(slurp(file));  // throws if malformed
  REQUIRE(j["kernels"].is_array());
  REQUIRE(j["kernels"].size() == 4);
  auto& k0 = j["kernels"][0];
  CHECK(k0["name"] == "bad_kernel");
  CHECK(k0["verdict"] == "mismatch");
  CHECK(k0["expect_met"] == false);
  CHECK(k0["cases_run"] == 12);
  CHECK(k0["cases_skipped"] == 2);
  REQUIRE(k0["failures"].size() == 1);
  auto& f = k0["failures"][0];
  CHECK(f["verdict"] == "mismatch");
  CHECK(f["call"] == 2);
  CHECK(f["repro"] == bad.failures[0].repro);
  CHECK(f["case_file"] == bad.failures[0].case_file.string());
  CHECK(f["detail"] == bad.failures[0].outcome.detail);  // quotes, backslash, newline survive
  CHECK(f["case"] == describe(sample_case()));
  CHECK(f["bad_elements"] == 3);
  REQUIRE(f["first_bad"].size() == 1);
  CHECK(f["first_bad"][0]["tensor"] == "C");
  CHECK(f["first_bad"][0]["row"] == 4);
  CHECK(f["first_bad"][0]["col"] == 5);
  CHECK(f["first_bad"][0]["got"] == 1.75);

  auto& k1 = j["kernels"][1];
  CHECK(k1["verdict"] == "pass");
  CHECK(k1["expect_met"] == true);
  CHECK(k1["failures"].empty());

  auto& k2 = j["kernels"][2];
  CHECK(k2["verdict"] == "mismatch");
  CHECK(k2["expect"] == "mismatch");
  CHECK(k2["expect_met"] == true);

  auto& k3 = j["kernels"][3];
  CHECK(k3["verdict"] == "setup_error");
  CHECK(k3["expect_met"] == false);
  CHECK(k3["setup_error"] == "compiling <x> & <y> failed");
}

TEST_CASE("KernelReport verdicts", "[reports]") {
  KernelReport none;
  CHECK(none.verdict() == "no_cases");
  CHECK_FALSE(none.expect_met());
  KernelReport infra = broken_kernel();
  infra.setup_exit = 3;
  CHECK(infra.verdict() == "infrastructure_error");
  KernelReport two = failing_kernel("k", "d");
  CaseFailure later = two.failures[0];
  later.outcome.verdict = Verdict::out_of_bounds_write;
  two.failures.push_back(later);
  CHECK(two.verdict() == "mismatch");  // the first failing case decides
  two.expect = "out_of_bounds_write";
  CHECK_FALSE(two.expect_met());
}

TEST_CASE("a case the machine could not run makes the kernel an infrastructure error in the reports", "[reports][oom]") {
  KernelReport k = passing_kernel();
  k.infrastructure.push_back({7, sample_case(), "cudaMalloc: out of device memory; still out of device memory after "
                                                "9 attempts over 60.0 s of waiting: the device has 0.20 of 139.80 GiB free"});
  CHECK(k.verdict() == "infrastructure_error");
  CHECK(k.infrastructure_failed());
  KernelReport found = failing_kernel("k", "d");
  found.infrastructure = k.infrastructure;
  CHECK(found.verdict() == "mismatch");  // a failure found is the kernel's, whatever the machine did later
  CHECK_FALSE(found.infrastructure_failed());

  TempDir tmp;
  make_json_reporter(tmp.dir / "r.json")->run_done({k});
  nlohmann::json j = nlohmann::json::parse(slurp(tmp.dir / "r.json"));
  auto& k0 = j["kernels"][0];
  CHECK(k0["verdict"] == "infrastructure_error");
  REQUIRE(k0["infrastructure_errors"].size() == 1);
  CHECK(k0["infrastructure_errors"][0]["index"] == 7);
  CHECK(k0["infrastructure_errors"][0]["case"] == describe(sample_case()));
  CHECK(k0["infrastructure_errors"][0]["message"] == k.infrastructure[0].message);

  make_junit_reporter(tmp.dir / "j.xml", true)->run_done({k});
  XmlDoc doc = parse_xml(slurp(tmp.dir / "j.xml"));
  REQUIRE(doc.error.empty());
  auto errors = find_all(doc, "error");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0]->attrs.at("message") == "infrastructure_error");
  CHECK(errors[0]->text.find("0.20 of 139.80 GiB free") != std::string::npos);
  CHECK(find_all(doc, "failure").empty());
}

TEST_CASE("JUnit report is well-formed XML with a failure per failing kernel", "[reports]") {
  TempDir tmp;
  fs::path file = tmp.dir / "junit.xml";
  const std::string detail = "C[0,1] expected < 1 & got > 2; \"quoted\" 'single'\x01 control";
  KernelReport bad = failing_kernel("gemm<f32>&co", detail);
  make_junit_reporter(file, false)->run_done({bad, passing_kernel(), broken_kernel()});

  std::string xml = slurp(file);
  XmlDoc doc = parse_xml(xml);
  INFO(xml);
  REQUIRE(doc.error.empty());
  CHECK(doc.elems[0].name == "testsuites");
  CHECK(doc.elems[0].attrs.at("tests") == "3");
  CHECK(doc.elems[0].attrs.at("failures") == "1");
  CHECK(doc.elems[0].attrs.at("errors") == "1");
  auto cases = find_all(doc, "testcase");
  REQUIRE(cases.size() == 3);
  CHECK(cases[0]->attrs.at("name") == "gemm<f32>&co");  // escaped in the file, intact when read
  auto failures = find_all(doc, "failure");
  REQUIRE(failures.size() == 1);
  CHECK(failures[0]->attrs.at("message") == "mismatch");
  // the failure belongs to the first testcase
  bool in_first = false;
  for (int ch : cases[0]->children) in_first |= doc.elems[size_t(ch)].name == "failure";
  CHECK(in_first);
  CHECK(failures[0]->text.find("C[0,1] expected < 1 & got > 2") != std::string::npos);
  CHECK(failures[0]->text.find(bad.failures[0].repro) != std::string::npos);
  auto errors = find_all(doc, "error");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0]->text == "compiling <x> & <y> failed");
  // raw '<' and '&' from the messages never reach the file unescaped
  CHECK(xml.find("expected < 1") == std::string::npos);
  CHECK(xml.find("& got") == std::string::npos);
  CHECK(xml.find('\x01') == std::string::npos);
}

TEST_CASE("save_case writes a case file that load_case_file reads back", "[reports]") {
  TempDir tmp;
  Spec spec;
  spec.name = "kern";
  spec.file = tmp.dir / "specs" / "kern.yaml";
  fs::create_directories(spec.file.parent_path());
  std::ofstream(spec.file) << "name: kern\n";
  CaseFailure f = sample_failure("3 of 1665 elements bad", {});
  fs::path file = save_case(tmp.dir / "out" / "kern", spec, f.c, f.outcome, 11);
  CHECK(file.filename() == "case-0011-mismatch.yaml");
  CHECK(fs::exists(file));
  std::string text = slurp(file);
  CHECK(text.find("# repro: assay repro " + file.string()) != std::string::npos);
  // the spec is named relative to the case file's folder...
  auto at = text.find("\nspec: ");
  REQUIRE(at != std::string::npos);
  std::string spec_line = text.substr(at + 7, text.find('\n', at + 1) - at - 7);
  CHECK(spec_line == "../../specs/kern.yaml");
  LoadedCase back = load_case_file(file);
  CHECK(back.c == f.c);
  CHECK(f64_bits(back.c.scalar("alpha")) == f64_bits(0.1));
  CHECK(f64_bits(gemm::problem(back.c).alpha) == f64_bits(0.1));
  CHECK(back.c.seed == 18446744073709551615ull);
  CHECK(fs::weakly_canonical(back.spec) == fs::weakly_canonical(spec.file));
  // ... so the case and its spec can move together
  fs::rename(tmp.dir / "out", tmp.dir / "moved");
  fs::rename(tmp.dir / "specs", tmp.dir / "moved_specs");
  fs::create_directories(tmp.dir / "moved2");
  fs::rename(tmp.dir / "moved", tmp.dir / "moved2" / "out");
  fs::rename(tmp.dir / "moved_specs", tmp.dir / "moved2" / "specs");
  LoadedCase moved = load_case_file(tmp.dir / "moved2" / "out" / "kern" / "case-0011-mismatch.yaml");
  CHECK(moved.c == f.c);
  CHECK(fs::exists(moved.spec));
}

TEST_CASE("save_case round trip for every verdict and generated cases", "[reports]") {
  TempDir tmp;
  Spec spec;
  spec.name = "kern";
  spec.file = tmp.dir / "kern.yaml";
  Spec s2;
  s2.set_dtype("a", DType::bf16), s2.set_dtype("b", DType::f16), s2.set_dtype("c", DType::f64);
  auto cases = gemm::sweep(s2, 5);
  REQUIRE(cases.size() > 20);
  int64_t i = 0;
  for (Verdict v : all_verdicts) {
    const Case c = gemm::to_case(cases[size_t(i * 7) % cases.size()]);
    CaseOutcome o;
    o.verdict = v, o.call = 1, o.detail = "detail of " + std::string(name(v));
    fs::path file = save_case(tmp.dir / "out", spec, c, o, i++);
    INFO(file.string());
    CHECK(file.filename().string().find(std::string(name(v))) != std::string::npos);
    CHECK(load_case_file(file).c == c);
  }
}

TEST_CASE("save_case keeps the file readable when the detail spans lines", "[reports]") {
  // Details carry text from the kernel (exception messages) and the device
  // (CUDA errors): a newline in them must not break the case file.
  TempDir tmp;
  Spec spec;
  spec.name = "kern";
  spec.file = tmp.dir / "kern.yaml";
  CaseOutcome o;
  o.verdict = Verdict::kernel_error, o.call = 1;
  o.detail = "exception escaped assay_run: first line\nsecond line: with a colon";
  Case c = sample_case();
  fs::path file = save_case(tmp.dir / "out", spec, c, o, 3);
  LoadedCase back;
  REQUIRE_NOTHROW(back = load_case_file(file));
  CHECK(back.c == c);
}
