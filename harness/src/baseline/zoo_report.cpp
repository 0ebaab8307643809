#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "baseline/zoo.h"
#include "core/build_info.h"

namespace assay::baseline {
namespace {

std::string cell_text(const ZooCell& c) {
  if (c.status == "n/a" || c.status == "error") return c.status;
  std::string s = c.status == "false alarm" ? "FALSE ALARM" : c.status;
  if (!c.verdict.empty() && c.verdict != "pass") s += " (" + c.verdict + ")";
  if (c.status == "caught" || c.status == "false alarm") s += fmt::format(" {:.2f}s", c.seconds);
  return s;
}

std::string rate(int num, int den) {
  return den == 0 ? "-" : fmt::format("{}/{} ({:.0f}%)", num, den, 100.0 * num / den);
}

// Milliseconds matter here: on the host most first failures come within one.
std::string median_text(const CheckerTotals& t) {
  return t.caught == 0 ? std::string("-") : fmt::format("{:.3f} s", t.median_detect_s);
}

std::string noise(const CheckerTotals& t) {
  if (!t.caught_at_false_alarm) return "";
  return fmt::format(", {} of them where it also fails a correct kernel", t.caught_at_false_alarm);
}

}  // namespace

std::string judge_cell(bool planted, bool failed) {
  if (planted) return failed ? "caught" : "missed";
  return failed ? "false alarm" : "pass";
}

// A row's cell of checker j; rows made with fewer checkers (older reports)
// read as n/a there.
static const ZooCell& cell_at(const ZooRow& r, size_t j) {
  static const ZooCell missing{"n/a", "", 0, 0, ""};
  return j < r.cells.size() ? r.cells[j] : missing;
}

std::vector<CheckerTotals> zoo_totals(const std::vector<ZooRow>& rows) {
  std::vector<CheckerTotals> out;
  for (size_t j = 0; j < kZooCheckers.size(); ++j) {
    CheckerTotals t;
    t.checker = kZooCheckers[j];
    std::vector<double> times;
    std::set<std::string> alarm_cases;
    for (const ZooRow& r : rows)
      if (cell_at(r, j).status == "false alarm" && !cell_at(r, j).failed_case.empty()) alarm_cases.insert(cell_at(r, j).failed_case);
    for (const ZooRow& r : rows) {
      const ZooCell& c = cell_at(r, j);
      if (c.status == "n/a") ++t.not_applicable;
      else if (r.planted) ++t.planted;
      else ++t.correct;
      if (c.status == "error") ++t.errors;
      if (c.status == "caught") ++t.caught, times.push_back(c.seconds);
      if (c.status == "caught" && alarm_cases.count(c.failed_case)) ++t.caught_at_false_alarm;
      if (c.status == "false alarm") ++t.false_alarms;
    }
    std::sort(times.begin(), times.end());
    const size_t n = times.size();
    if (n) t.median_detect_s = n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
    out.push_back(t);
  }
  return out;
}

std::vector<FamilyTotals> zoo_family_totals(const std::vector<ZooRow>& rows) {
  std::vector<std::string> order;
  for (const ZooRow& r : rows)
    if (std::find(order.begin(), order.end(), r.family) == order.end()) order.push_back(r.family);
  std::vector<FamilyTotals> out;
  for (const std::string& f : order) {
    std::vector<ZooRow> of;
    for (const ZooRow& r : rows)
      if (r.family == f) of.push_back(r);
    out.push_back({f, int(of.size()), zoo_totals(of)});
  }
  return out;
}

std::string zoo_family_console(const std::vector<FamilyTotals>& families) {
  std::string s = "per op family:\n";
  for (const FamilyTotals& f : families) {
    const CheckerTotals& a = f.checkers[0];
    s += fmt::format("  {:<12} {:>3} kernels: assay detected {:<14} false alarms {:<12} median time to first failure "
                     "{}",
                     f.family, f.kernels, rate(a.caught, a.planted), rate(a.false_alarms, a.correct), median_text(a));
    for (size_t j = 1; j < f.checkers.size(); ++j)
      if (f.checkers[j].planted + f.checkers[j].correct > 0)
        s += fmt::format("; {} {}", f.checkers[j].checker, rate(f.checkers[j].caught, f.checkers[j].planted));
    s += "\n";
  }
  return s;
}

std::string zoo_console(const std::vector<ZooRow>& rows, const std::vector<CheckerTotals>& totals) {
  size_t wname = 6, wexp = 6;
  for (const ZooRow& r : rows) wname = std::max(wname, r.name.size()), wexp = std::max(wexp, r.expect.size());
  std::vector<size_t> w(kZooCheckers.size());
  for (size_t j = 0; j < w.size(); ++j) {
    w[j] = kZooCheckers[j].size();
    for (const ZooRow& r : rows) w[j] = std::max(w[j], cell_text(cell_at(r, j)).size());
  }
  std::string s = fmt::format("{:<{}}  {:<{}}", "kernel", wname, "expect", wexp);
  for (size_t j = 0; j < w.size(); ++j) s += fmt::format("  {:<{}}", kZooCheckers[j], w[j]);
  s += "\n";
  for (const ZooRow& r : rows) {
    s += fmt::format("{:<{}}  {:<{}}", r.name, wname, r.expect.empty() ? "pass" : r.expect, wexp);
    for (size_t j = 0; j < w.size(); ++j) s += fmt::format("  {:<{}}", cell_text(cell_at(r, j)), w[j]);
    s += "\n";
  }
  s += "\n";
  for (const CheckerTotals& t : totals)
    s += fmt::format("{:<13} detected {:<14} false alarms {:<12} median time to detect {:.2f}s{}{}\n", t.checker,
                     rate(t.caught, t.planted), rate(t.false_alarms, t.correct), t.median_detect_s,
                     t.not_applicable ? fmt::format(" ({} n/a)", t.not_applicable) : "", noise(t));
  return s;
}

std::string zoo_markdown(const std::vector<ZooRow>& rows, const std::vector<CheckerTotals>& totals,
                         const ZooMeta& meta) {
  std::string s = fmt::format("# Bug zoo: assay against today's checkers ({})\n\n", meta.backend);
  s += fmt::format("- date: {}\n- device: {}\n- assay: {}\n- gate budget: {:g} s per kernel\n- command: `{}`\n",
                   meta.date, meta.device, build_line(), meta.budget_s, meta.command);
  if (!meta.note.empty()) s += "- note: " + meta.note + "\n";
  s += "\nCells: caught / missed (planted bug), pass / FALSE ALARM (correct kernel), seconds to the first "
       "failure; rules in docs/baselines.md.\n\n| kernel | expect |";
  for (auto& c : kZooCheckers) s += " " + c + " |";
  s += "\n|---|---|";
  for (size_t j = 0; j < kZooCheckers.size(); ++j) s += "---|";
  s += "\n";
  for (const ZooRow& r : rows) {
    s += fmt::format("| {} | {} |", r.name, r.expect.empty() ? "pass" : r.expect);
    for (const ZooCell& c : r.cells) s += " " + cell_text(c) + " |";
    s += "\n";
  }
  s += "\n| checker | detected | of them where it also fails a correct kernel | false alarms | median time to detect | "
       "n/a | errors |\n|---|---|---|---|---|---|---|\n";
  for (const CheckerTotals& t : totals)
    s += fmt::format("| {} | {} | {} | {} | {:.2f} s | {} | {} |\n", t.checker, rate(t.caught, t.planted),
                     t.caught_at_false_alarm, rate(t.false_alarms, t.correct), t.median_detect_s, t.not_applicable,
                     t.errors);
  s += "\n## Per op family\n\nDetected planted bugs / false alarms on correct kernels, and the median seconds "
       "to the first failure over the planted bugs caught.\n\n| family | kernels |";
  for (auto& c : kZooCheckers) s += " " + c + " |";
  s += "\n|---|---|";
  for (size_t j = 0; j < kZooCheckers.size(); ++j) s += "---|";
  s += "\n";
  for (const FamilyTotals& f : zoo_family_totals(rows)) {
    s += fmt::format("| {} | {} |", f.family, f.kernels);
    for (const CheckerTotals& t : f.checkers)
      s += t.planted + t.correct == 0  // the rule judged none of the family's kernels
               ? std::string(" n/a |")
               : fmt::format(" {}, {} false, {} |", rate(t.caught, t.planted), rate(t.false_alarms, t.correct),
                             median_text(t));
    s += "\n";
  }
  s += "\n## First failure per cell\n\n";
  for (const ZooRow& r : rows)
    for (size_t j = 0; j < r.cells.size(); ++j)
      if (!cell_at(r, j).detail.empty()) s += fmt::format("- {} / {}: {}\n", r.name, kZooCheckers[j], cell_at(r, j).detail);
  return s;
}

nlohmann::json zoo_json(const std::vector<ZooRow>& rows, const std::vector<CheckerTotals>& totals,
                        const ZooMeta& meta) {
  nlohmann::json j = {{"date", meta.date},       {"backend", meta.backend}, {"device", meta.device},
                      {"commit", build_commit()}, {"build", build_json()}, {"budget_s", meta.budget_s},
                      {"command", meta.command},
                      {"note", meta.note},       {"kernels", nlohmann::json::array()},
                      {"totals", nlohmann::json::array()}};
  for (const ZooRow& r : rows) {
    nlohmann::json k = {{"name", r.name},         {"spec", r.spec},       {"family", r.family},
                        {"expect", r.expect},     {"planted", r.planted}};
    for (size_t i = 0; i < r.cells.size(); ++i) {
      const ZooCell& c = cell_at(r, i);
      k["checkers"][kZooCheckers[i]] = {{"status", c.status}, {"verdict", c.verdict}, {"seconds", c.seconds},
                                        {"cases", c.cases},   {"detail", c.detail}, {"failed_case", c.failed_case}};
      if (i == 0) k["checkers"][kZooCheckers[i]]["worst_pass_bound_ratio"] = c.worst_pass_ratio;
    }
    j["kernels"].push_back(k);
  }
  auto totals_json = [](const CheckerTotals& t) {
    return nlohmann::json{{"checker", t.checker},
                          {"planted", t.planted},
                          {"caught", t.caught},
                          {"correct", t.correct},
                          {"false_alarms", t.false_alarms},
                          {"not_applicable", t.not_applicable},
                          {"errors", t.errors},
                          {"caught_at_false_alarm", t.caught_at_false_alarm},
                          {"median_detect_s", t.median_detect_s}};
  };
  for (const CheckerTotals& t : totals) j["totals"].push_back(totals_json(t));
  j["families"] = nlohmann::json::array();
  for (const FamilyTotals& f : zoo_family_totals(rows)) {
    nlohmann::json fj = {{"family", f.family}, {"kernels", f.kernels}, {"totals", nlohmann::json::array()}};
    for (const CheckerTotals& t : f.checkers) fj["totals"].push_back(totals_json(t));
    j["families"].push_back(fj);
  }
  return j;
}

}  // namespace assay::baseline
