#include "bench/bench_report.h"

#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "core/build_info.h"
#include "report/reporter.h"

namespace assay::bench {
namespace {

using nlohmann::json;

json or_null(const std::optional<double>& x) { return x ? json(*x) : json(nullptr); }

json time_json(const TimeSummary& t, StopReason stop, int64_t discarded, const std::optional<double>& clock) {
  if (t.samples == 0) return nullptr;
  return {{"median", t.median}, {"q1", t.q1},     {"q3", t.q3},         {"min", t.min},
          {"max", t.max},       {"samples", t.samples}, {"noise", t.noise()}, {"stop", std::string(name(stop))},
          {"discarded", discarded}, {"clock_mhz", or_null(clock)}};
}

json side_json(const BenchSide& s, const ShapeResult& r) {
  const bool timed = s.timed() && s.cold.samples > 0;
  return {{"name", s.name},
          {"spec", s.spec},
          {"verdict", s.verdict},
          {"detail", s.detail},
          {"cold", timed ? time_json(s.cold, s.cold_stop, s.discarded, s.clock_mhz) : json(nullptr)},
          {"hot", timed ? time_json(s.hot, s.hot_stop, s.discarded, s.clock_mhz) : json(nullptr)},
          {"first_sight", s.first_sight.empty() ? json(nullptr) : json(s.first_sight)},
          {"first_sight_repeat", s.first_sight.empty() ? json(nullptr) : json(s.first_sight_repeat)},
          {"flops_per_s", timed && r.flops > 0 ? json(r.flops / s.cold.median) : json(nullptr)},
          {"bytes_per_s", timed && r.bytes > 0 ? json(r.bytes / s.cold.median) : json(nullptr)}};
}

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string si_seconds(double s) {
  if (s <= 0) return "—";
  if (s < 1e-6) return fmt::format("{:.3g} ns", s * 1e9);
  if (s < 1e-3) return fmt::format("{:.3g} µs", s * 1e6);
  if (s < 1) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} s", s);
}

}  // namespace

json to_json(const BenchReport& r) {
  json peaks = {{"flops_per_s", r.peaks.flops_per_s > 0 ? json(r.peaks.flops_per_s) : json(nullptr)},
                {"bytes_per_s", r.peaks.bytes_per_s > 0 ? json(r.peaks.bytes_per_s) : json(nullptr)},
                {"cache_bytes", r.peaks.cache_bytes},
                {"source", r.peaks.source}};
  json rates = json::object();
  for (const auto& [precision, rate] : r.peaks.rates) rates[precision] = rate;
  peaks["rates"] = rates;
  json device = {{"name", r.peaks.device}, {"peaks", peaks}, {"clock_note", r.clock_note}};
  device["sm_clock_mhz"] = r.clock ? json(r.clock->sm_mhz) : json(nullptr);
  device["max_sm_clock_mhz"] = r.clock ? json(r.clock->max_sm_mhz) : json(nullptr);
  device["throttled"] = r.clock ? json(r.clock->why) : json(nullptr);
  json shapes = json::array();
  for (const ShapeResult& s : r.shapes) {
    json sizes = json::object();
    for (const auto& [n, v] : s.sizes) sizes[n] = v;
    shapes.push_back({{"shape", s.shape},
                      {"sizes", sizes},
                      {"case", s.case_line},
                      {"flops", s.flops},
                      {"bytes", s.bytes},
                      {"floor_seconds", s.floor_seconds > 0 ? json(s.floor_seconds) : json(nullptr)},
                      {"verdict", s.verdict},
                      {"detail", s.detail},
                      {"speedup", s.speed ? json(s.speed->speedup) : json(nullptr)},
                      {"speedup_low", s.speed ? json(s.speed->low) : json(nullptr)},
                      {"speedup_high", s.speed ? json(s.speed->high) : json(nullptr)},
                      {"candidate", side_json(s.candidate, s)},
                      {"baseline", side_json(s.baseline, s)}});
  }
  return {{"tool", "assay bench"},
          {"build", build_json()},
          {"date", utc_now()},
          {"backend", r.backend},
          {"device", device},
          {"candidate", {{"name", r.candidate}, {"spec", r.candidate_spec}}},
          {"baseline", {{"name", r.baseline}, {"spec", r.baseline_spec}}},
          {"inputs", r.inputs},
          {"shapes", shapes},
          {"geomean_speedup", or_null(r.geomean_speedup)},
          {"require_speedup", or_null(r.require_speedup)},
          {"claim_holds", r.claim_holds ? json(*r.claim_holds) : json(nullptr)},
          {"setup_error", r.setup_error},
          {"exit_code", r.exit_code()}};
}

std::string to_markdown(const BenchReport& r) {
  std::string md = fmt::format("# assay bench: {} against {}\n\n", r.candidate, r.baseline);
  md += fmt::format("- build: {}\n- backend: {}, device: {}\n", build_line(), r.backend, r.peaks.device);
  if (r.clock) md += fmt::format("- SM clock at the start: {} of {} MHz{}\n", r.clock->sm_mhz, r.clock->max_sm_mhz,
                                 r.clock->throttled ? " (throttled: " + r.clock->why + ")" : "");
  md += fmt::format("- peaks: {}\n- inputs: {}\n", r.peaks.source, r.inputs);
  if (!r.setup_error.empty()) return md + fmt::format("\n**Setup failed:** {}\n", r.setup_error);
  md += "\n| shape | verdict | speedup [interval] | candidate cold (IQR, n) | hot | baseline cold (IQR, n) | hot | floor |\n";
  md += "|---|---|---|---|---|---|---|---|\n";
  auto side = [](const BenchSide& s, bool cold) {
    if (!s.timed()) return s.verdict;
    const TimeSummary& t = cold ? s.cold : s.hot;
    if (!cold) return si_seconds(t.median);
    return fmt::format("{} ({}–{}, {})", si_seconds(t.median), si_seconds(t.q1), si_seconds(t.q3), t.samples);
  };
  for (const ShapeResult& s : r.shapes)
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", s.shape, s.verdict,
                      s.speed ? fmt::format("{:.3f} [{:.3f}, {:.3f}]", s.speed->speedup, s.speed->low, s.speed->high) : "—",
                      side(s.candidate, true), side(s.candidate, false), side(s.baseline, true), side(s.baseline, false),
                      si_seconds(s.floor_seconds));
  md += "\n";
  for (const ShapeResult& s : r.shapes)
    if (!s.speed) md += fmt::format("- **{}**: {}: {}\n", s.shape, s.verdict, s.detail);
  if (r.geomean_speedup) md += fmt::format("\nGeometric mean of the speedups: {:.3f}.\n", *r.geomean_speedup);
  if (r.require_speedup)
    md += fmt::format("Required speedup {:.3f}: {}.\n", *r.require_speedup, r.claim_holds.value_or(false) ? "holds" : "does NOT hold");
  return md;
}

std::string to_junit(const BenchReport& r) {
  int failures = 0;
  std::string body;
  for (const ShapeResult& s : r.shapes) {
    const bool ok = s.speed.has_value();
    body += fmt::format("    <testcase classname=\"assay.bench.{}\" name=\"{}\" time=\"{:.6f}\">\n", xml_escape(r.backend),
                        xml_escape(r.candidate + " " + s.shape), s.candidate.timed() ? s.candidate.cold.median : 0.0);
    if (!ok) {
      ++failures;
      body += fmt::format("      <failure type=\"{}\" message=\"{}\"/>\n", xml_escape(s.verdict), xml_escape(s.detail));
    } else {
      body += fmt::format("      <system-out>{}: {}</system-out>\n", xml_escape(s.verdict), xml_escape(s.detail));
    }
    body += "    </testcase>\n";
  }
  if (r.require_speedup) {
    const bool holds = r.claim_holds.value_or(false);
    failures += !holds;
    body += fmt::format("    <testcase classname=\"assay.bench.{}\" name=\"{} require-speedup {:.3f}\" time=\"0\">\n",
                        xml_escape(r.backend), xml_escape(r.candidate), *r.require_speedup);
    if (!holds)
      body += fmt::format("      <failure type=\"claim\" message=\"geometric mean {} is below {:.3f}\"/>\n",
                          r.geomean_speedup ? fmt::format("{:.3f}", *r.geomean_speedup) : "undefined", *r.require_speedup);
    body += "    </testcase>\n";
  }
  if (!r.setup_error.empty()) {
    ++failures;
    body += fmt::format("    <testcase classname=\"assay.bench\" name=\"{} setup\" time=\"0\">\n      <error message=\"{}\"/>\n    </testcase>\n",
                        xml_escape(r.candidate), xml_escape(r.setup_error));
  }
  const size_t tests = r.shapes.size() + (r.require_speedup ? 1 : 0) + (r.setup_error.empty() ? 0 : 1);
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"assay bench\" tests=\"{}\" "
                     "failures=\"{}\">\n{}  </testsuite>\n</testsuites>\n",
                     tests, failures, body);
}

}  // namespace assay::bench
