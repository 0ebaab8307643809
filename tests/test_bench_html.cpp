// The HTML report of `assay bench` (report/bench_html.h): self-contained,
// escaped, unbroken by nulls, and (where a Chromium is installed) drawn: the
// page's own script counts the marks the browser laid out at a size.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "report/bench_html.h"

using namespace assay;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Three shapes: one FASTER, one SAME, one failure whose timings are null;
// names with markup in them, and a device with its peaks.
json sample_report() {
  return R"json({
    "tool": "assay bench", "build": {"commit": "abc1234", "line": "assay 0.1 (commit abc1234, clean)"},
    "date": "2026-12-01T12:00:00Z", "backend": "cuda",
    "device": {"name": "NVIDIA H200", "sm_clock_mhz": 1980, "max_sm_clock_mhz": 1980,
               "peaks": {"flops_per_s": 1.979e15, "bytes_per_s": 4.8e12, "source": "datasheet"}},
    "candidate": {"name": "tiled <b>& fused", "spec": "kernels/tiled.yaml"},
    "baseline": {"name": "cuBLAS", "spec": "reference"},
    "inputs": "uniform in [-1, 1] <two sets>",
    "shapes": [
      {"shape": "m=4096 n=4096 k=4096", "sizes": {"m": 4096, "n": 4096, "k": 4096},
       "flops": 1.37e11, "bytes": 2.0e8, "floor_seconds": 6.9e-5, "verdict": "FASTER", "detail": "IQRs apart",
       "speedup": 1.23, "speedup_low": 1.2, "speedup_high": 1.26,
       "candidate": {"verdict": "timed", "detail": "",
                     "cold": {"median": 1.0e-4, "q1": 0.98e-4, "q3": 1.02e-4, "min": 0.95e-4, "max": 1.1e-4,
                              "samples": 40, "noise": 0.004, "stop": "converged", "discarded": 0, "clock_mhz": 1980},
                     "hot": {"median": 0.9e-4, "q1": 0.89e-4, "q3": 0.91e-4, "min": 0.88e-4, "max": 0.95e-4,
                             "samples": 40, "noise": 0.02, "stop": "converged", "discarded": 0, "clock_mhz": 1980},
                     "flops_per_s": 1.37e15, "bytes_per_s": 2.0e12},
       "baseline": {"verdict": "timed", "detail": null,
                    "cold": {"median": 1.23e-4, "q1": 1.22e-4, "q3": 1.24e-4, "min": 1.2e-4, "max": 1.3e-4,
                             "samples": 40, "noise": 0.016, "stop": "noise_stable", "discarded": 2, "clock_mhz": 1980},
                    "hot": null, "flops_per_s": 1.11e15, "bytes_per_s": 1.6e12}},
      {"shape": "m=128 n=128 k=128", "flops": 4.2e6, "bytes": 1.97e5, "floor_seconds": 4.1e-8, "verdict": "SAME",
       "detail": "IQRs overlap", "speedup": 1.0, "speedup_low": 0.95, "speedup_high": 1.05,
       "candidate": {"verdict": "timed", "cold": {"median": 5e-6, "q1": 4.9e-6, "q3": 5.1e-6, "samples": 200},
                     "hot": {"median": 4e-6}, "flops_per_s": 8.4e11, "bytes_per_s": 3.9e10},
       "baseline": {"verdict": "timed", "cold": {"median": 5e-6, "q1": 4.8e-6, "q3": 5.2e-6, "samples": 200},
                    "hot": {"median": 4.1e-6}, "flops_per_s": 8.4e11, "bytes_per_s": 3.9e10}},
      {"shape": "m=1000 n=1000 k=1000", "flops": 2e9, "bytes": 1.2e7, "floor_seconds": 1.1e-6,
       "verdict": "timing_escape", "detail": "work left running after the end event",
       "speedup": null, "speedup_low": null, "speedup_high": null,
       "candidate": {"verdict": "timing_escape", "detail": "side stream", "cold": null, "hot": null,
                     "flops_per_s": null, "bytes_per_s": null},
       "baseline": {"verdict": null, "cold": null, "hot": null, "flops_per_s": null, "bytes_per_s": null}}
    ],
    "geomean_speedup": 1.1, "require_speedup": 0.97, "claim_holds": true
  })json"_json;
}

// The SVG element whose id is `id`, from its "<svg" to its "</svg>"; empty when there is none.
std::string svg_element(const std::string& html, const std::string& id) {
  const size_t at = html.find("id=\"" + id + "\"");
  if (at == std::string::npos) return "";
  const size_t begin = html.rfind("<svg", at), end = html.find("</svg>", at);
  if (begin == std::string::npos || end == std::string::npos) return "";
  return html.substr(begin, end + 6 - begin);
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// The value of attribute `name` in the start tag that holds `id="..."`; empty when absent.
std::string attribute_of(const std::string& dom, const std::string& tag_marker, const std::string& name) {
  const size_t at = dom.find(tag_marker);
  if (at == std::string::npos) return "";
  const size_t begin = dom.rfind('<', at), end = dom.find('>', at);
  const std::string tag = dom.substr(begin, end - begin);
  std::smatch m;
  if (!std::regex_search(tag, m, std::regex(" " + name + "=\"([^\"]*)\""))) return "";
  return m[1];
}

// The first of the usual Chromium names on PATH; empty when none.
std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    const auto r = testing::run_command(std::string("command -v ") + name);
    if (r.code == 0 && !r.output.empty()) return r.output.substr(0, r.output.find('\n'));
  }
  return "";
}

struct ScratchDir {
  fs::path dir;
  ScratchDir() {
    std::random_device rd;
    dir = fs::temp_directory_path() / ("assay_test_bench_html_" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(dir);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

TEST_CASE("bench html: one self-contained page, names escaped, nulls rendered", "[bench][html]") {
  const std::string html = bench_html(sample_report());
  // Nothing fetched: no address, no script from elsewhere.
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("<script src") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(occurrences(html, "<script") == 1);  // the one that measures the marks
  for (const char* id : {"plot-time", "plot-speedup", "plot-roofline"}) {
    INFO(id);
    const std::string svg = svg_element(html, id);
    REQUIRE(!svg.empty());
    CHECK(svg.find("class=\"plot\"") != std::string::npos);
    CHECK(occurrences(svg, "class=\"mark") > 0);
  }
  // The names as text, never as markup.
  CHECK(html.find("tiled &lt;b&gt;&amp; fused") != std::string::npos);
  CHECK(html.find("<b>") == std::string::npos);
  CHECK(html.find("&lt;two sets&gt;") != std::string::npos);
  // Header facts.
  CHECK(html.find("NVIDIA H200") != std::string::npos);
  CHECK(html.find("SM 1980 MHz (max 1980 MHz)") != std::string::npos);
  CHECK(html.find("abc1234") != std::string::npos);
  CHECK(html.find("1.10×") != std::string::npos);
  CHECK(html.find("Required speedup ≥ 0.97×: holds") != std::string::npos);
  // The first shape's numbers, with their units.
  CHECK(html.find("1.23× [1.20×, 1.26×]") != std::string::npos);
  CHECK(html.find("100 µs") != std::string::npos);   // candidate cold median
  CHECK(html.find("69.0 µs") != std::string::npos);  // floor
  CHECK(html.find("1.37 PFLOP/s") != std::string::npos);
  // The failed shape: its nulls as "—", its verdict in the speedup plot's gap, not as a bar.
  const size_t third = html.find("id=\"shape-3\"");
  REQUIRE(third != std::string::npos);
  const std::string table = html.substr(third, html.find("</table>", third) - third);
  CHECK(table.find("timing_escape") != std::string::npos);
  CHECK(table.find("<td>—</td><td>—</td>") != std::string::npos);
  const std::string speedup = svg_element(html, "plot-speedup");
  CHECK(occurrences(speedup, "class=\"mark bar") == 2);
  CHECK(speedup.find("class=\"gap\"") != std::string::npos);
  CHECK(speedup.find(">timing_escape</text>") != std::string::npos);
  // Time plot: two timed shapes, two sides, a marker and a whisker each, and three floors.
  CHECK(occurrences(svg_element(html, "plot-time"), "class=\"mark") == 2 * 2 * 2 + 3);
  // Roofline: the two sides of two shapes.
  CHECK(occurrences(svg_element(html, "plot-roofline"), "class=\"mark") == 4);
  CHECK(svg_element(html, "plot-roofline").find("class=\"roof\"") != std::string::npos);
}

TEST_CASE("bench html: an empty, null or misshapen report still renders", "[bench][html]") {
  json empty = sample_report();
  empty["shapes"] = json::array();
  const std::string html = bench_html(empty);
  CHECK(html.find("no shapes") != std::string::npos);
  CHECK(html.find("<svg") == std::string::npos);
  // Every field null, or of the wrong type: "—" where a value would be, no throw.
  for (const json& report : {json(), json::array(), json("text"),
                             json{{"shapes", nullptr}, {"device", nullptr}, {"build", 3}},
                             json{{"shapes", {nullptr, 1, json::object()}}, {"candidate", {{"name", nullptr}}},
                                  {"require_speedup", 1.5}, {"claim_holds", nullptr}},
                             json{{"shapes", {{{"verdict", "FASTER"}, {"speedup", "fast"}, {"flops", -1},
                                               {"candidate", {{"cold", {{"median", 0}, {"q1", "x"}}}}}}}},
                                  {"device", {{"peaks", {{"flops_per_s", 0}}}}}}}) {
    INFO(report.dump());
    std::string page;
    REQUIRE_NOTHROW(page = bench_html(report));
    CHECK(page.find("</html>") != std::string::npos);
    CHECK(page.find("—") != std::string::npos);
  }
  // A shape without a name is named by its sizes.
  json sized = sample_report();
  sized["shapes"][0].erase("shape");
  CHECK(bench_html(sized).find("#1 k=4096 m=4096 n=4096") != std::string::npos);
}

TEST_CASE("bench html: headless Chromium draws every plot's marks", "[bench][html]") {
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    WARN("bench html in a browser skipped: no chromium (chromium, chromium-browser, google-chrome) on PATH");
    return;
  }
  const std::string html = bench_html(sample_report());
  ScratchDir scratch;
  const fs::path page = scratch.dir / "bench.html", errors = scratch.dir / "chromium.log";
  std::ofstream(page, std::ios::binary) << html;
  // Root needs --no-sandbox; its own profile folder keeps parallel runs apart.
  const std::string command =
      "( timeout 60 " + testing::quote(chromium) +
      " --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 --user-data-dir=" +
      testing::quote((scratch.dir / "profile").string()) + " --dump-dom " +
      testing::quote("file://" + page.string()) + " 2>" + testing::quote(errors.string()) + " )";
  const testing::CliResult r = testing::run_command(command);
  std::string log;
  {
    std::ifstream in(errors);
    log.assign(std::istreambuf_iterator<char>(in), {});
  }
  INFO("chromium: " << chromium << "\nexit code " << r.code << "\nits stderr, last part:\n"
                    << log.substr(log.size() > 3000 ? log.size() - 3000 : 0));
  if (r.code == 124) FAIL("chromium ran past its 60 s");
  if (r.code > 128) FAIL("chromium crashed: signal " << r.code - 128);
  REQUIRE(r.code == 0);  // chromium refused the page or its flags
  const std::string& dom = r.output;
  REQUIRE(dom.find("</html>") != std::string::npos);
  for (const char* id : {"plot-time", "plot-speedup", "plot-roofline"}) {
    INFO(id);
    const std::string drawn = attribute_of(dom, std::string("id=\"") + id + "\"", "data-drawn");
    REQUIRE(!drawn.empty());  // the script ran
    // Every mark in the page has a size in the browser's layout.
    CHECK(std::stoul(drawn) == occurrences(svg_element(html, id), "class=\"mark"));
    CHECK(std::stoul(drawn) > 0);
  }
  CHECK(attribute_of(dom, "<body", "data-plots-drawn") == "3");
}
