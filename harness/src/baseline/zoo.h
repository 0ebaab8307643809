// The detection table of `assay zoo`: one row per kernel, one cell per
// checker (assay's gate, then the baselines), totals per checker, and the
// console, Markdown and JSON forms of it.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "gate/gate.h"
#include "spec/spec.h"

namespace assay::baseline {

// Column order of every table.
// deepgemm is DeepGEMM's test: fp8_gemm has it, the other families show n/a.
inline const std::vector<std::string> kZooCheckers = {"assay", "kernelbench", "tutorial", "assert_close", "deepgemm"};

struct ZooCell {
  // caught / missed (planted kernel), pass / false alarm (correct kernel),
  // n/a (the rule cannot judge it), error (it could not run).
  std::string status;
  std::string verdict;  // assay only: the gate's verdict
  double seconds = 0;   // to the first failure when it failed, else the whole run
  int cases = 0;
  std::string detail;
  std::string failed_case;  // baselines: which of the rule's cases failed first
  // assay only: the largest error/allowed-error ratio over the passing
  // cases (what calibrates T: docs/tolerance.md); 0 when no case passed.
  double worst_pass_ratio = 0;
};

struct ZooRow {
  std::string name, spec, expect;
  std::string family;          // the spec's op (gemm, softmax, layernorm, ...)
  bool planted = false;        // expect is set and is not "pass"
  std::vector<ZooCell> cells;  // kZooCheckers order
};

// One kernel through assay's gate (opt as given, a silent reporter) and then
// each baseline, each in a runner of its own (a fresh worker: no state carried
// over from the gate). Never throws for the kernel's faults; InfraError only
// when the backend itself breaks.
ZooRow run_zoo_kernel(const Spec& spec, Backend& backend, const GateOptions& opt);

// "caught"/"missed" or "false alarm"/"pass" for a checker that failed (or
// not) the kernel.
std::string judge_cell(bool planted, bool failed);

struct CheckerTotals {
  std::string checker;
  int planted = 0, caught = 0;            // planted kernels it judged, and caught
  int correct = 0, false_alarms = 0;      // correct kernels it judged, and failed
  int not_applicable = 0, errors = 0;
  // Catches made at a case where the checker also fails a correct kernel:
  // its noise, not evidence about the bug.
  int caught_at_false_alarm = 0;
  double median_detect_s = 0;             // over the caught planted kernels
};
std::vector<CheckerTotals> zoo_totals(const std::vector<ZooRow>& rows);

// The same totals for each op family's kernels, families in first-seen order:
// a median time to the first failure per family, since one family's bugs
// may all fall at the first case and another's only deep in the sweep.
struct FamilyTotals {
  std::string family;
  int kernels = 0;
  std::vector<CheckerTotals> checkers;  // kZooCheckers order
};
std::vector<FamilyTotals> zoo_family_totals(const std::vector<ZooRow>& rows);

struct ZooMeta {
  std::string date, backend, device, command;  // the build of assay is core/build_info.h's
  double budget_s = 60;
  std::string note;  // e.g. why the host budget is smaller
};

std::string zoo_console(const std::vector<ZooRow>& rows, const std::vector<CheckerTotals>& totals);
// Totals per family: for assay, and each baseline's detection rate.
std::string zoo_family_console(const std::vector<FamilyTotals>& families);
std::string zoo_markdown(const std::vector<ZooRow>& rows, const std::vector<CheckerTotals>& totals,
                         const ZooMeta& meta);
nlohmann::json zoo_json(const std::vector<ZooRow>& rows, const std::vector<CheckerTotals>& totals,
                        const ZooMeta& meta);

}  // namespace assay::baseline
