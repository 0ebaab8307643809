// Shrinking: from a failing case, the smallest case that still fails the same
// way (same verdict), so a bug comes back small enough to debug by eye. It
// tries the op's simplifications (layouts, scalars: Op::simplifications),
// then moves each size down (Op::resize), preferring small and boundary
// values; every candidate stays inside the spec's requires. It names no op.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "case/case.h"
#include "exec/executor.h"
#include "ops/op.h"
#include "spec/spec.h"

namespace assay {

struct ShrinkResult {
  Case shrunk;
  CaseOutcome outcome;             // of the shrunk case
  int attempts = 0;                // cases run while shrinking
  int reruns = 0;                  // final re-runs of the shrunk case: 3, or 1 past the time limit
  int reproduced = 0;              // of those re-runs
  bool flaky = false;              // the shrunk case failed in only some re-runs
  bool stopped = false;            // the run's deadline cut it short: the smallest failing case found so far
  std::vector<std::string> notes;  // which properties matter, e.g. "fails at len = 1 (len % 4 != 0); passes for len = 4"
};

// Runs one case and tells its outcome; the shrinker knows nothing else of execution.
using CaseProbe = std::function<CaseOutcome(const Case&)>;

// `failing` must fail with verdict `original.verdict`. `max_attempts` and
// `max_seconds` bound the work (each attempt is one case run; a huge case
// may take seconds). The final re-runs and the property probes behind the
// notes (shrink/properties.h, at most two dozen cases) come on top of the
// attempts; the steps leave them the last quarter of `max_seconds`. A probe
// that throws DeadlineReached ends the shrink with what it has.
// `op` is the case's op (op_of(spec)).
ShrinkResult shrink(const Op& op, const Spec& spec, const Case& failing, const CaseOutcome& original,
                    const CaseProbe& probe, int max_attempts = 400, double max_seconds = 1e9);

// How many attempts a failure with verdict v may spend shrinking; 0: keep it
// as found. A crash, CUDA error or hang costs a fresh worker per attempt that
// still fails (a hang its whole timeout too), so it gets fewer, and the time
// limit bounds it; in process (isolated false) it may have taken the CUDA
// context with it.
int shrink_attempts_for(Verdict v, bool isolated, int max_attempts);

// One paragraph for humans: verdict, the shrunk case, first bad element, notes.
std::string explain(const ShrinkResult& r);

}  // namespace assay
