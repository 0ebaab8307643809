// Runs one case against a candidate with every guard on, and judges it:
//   call 1: fresh, poisoned memory; guards, inputs and output checked; the
//           reference is computed only after the candidate ran;
//   call 2: new inputs in the same buffers (stale or cached answers): call
//           1's moved round where the op has a relabelling (Op::relabeling:
//           GEMM), so its reference is call 1's moved; else freshly drawn;
//   call 3: call 2's inputs with a few elements changed, at positions drawn
//           per case (answers cached on a partial fingerprint of the inputs);
//   call 4: a bitwise repeat of call 3 when the spec says deterministic.
// run_case sets up each call after judging the one before. run_cases plans
// small cases whole: the later calls' inputs are staged up front, and the
// candidate's process captures what each call left and puts the next call's
// inputs in place itself. A worker then makes all the calls of several
// cases in one exchange, in the order one at a time makes them, and on a
// GPU the two processes take turns once per exchange instead of twice per call.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "case/case.h"
#include "core/deadline.h"
#include "exec/runner.h"
#include "judge/compare.h"
#include "ops/op.h"
#include "spec/spec.h"

namespace assay {

struct ExecOptions {
  Compute compute = Compute::f32;
  double tolerance_scale = 2.0;
  bool deterministic = true;
  bool keep_tensors = false;  // fill CaseOutcome::tensors (for `assay repro --dump`)
  double timeout_s = 0;       // per call; 0: scaled with the case's size (Op::default_timeout)
  Subnormals subnormals = Subnormals::ieee;  // the spec's contract below the smallest normal
  // Each tensor its own allocation of exactly its extent, no guard zones
  // (replays under a memory checker: `assay repro --exact-alloc`). In
  // process only: a worker cannot map such buffers.
  bool exact_alloc = false;
  // The run's deadline: the comparison stops at it (DeadlineReached); the
  // runner's calls stop at the runner's own (Runner::set_deadline).
  Deadline deadline{};
  // Confirmation runs (below, confirm_cached): call 1 draws the inputs that
  // call N of the case draws, and is the only call made.
  int first_call_inputs_of = 1;
};

// Host copies of the tensors of the last call compared with the reference
// (the failing call, when one failed on its values), for dumping: per
// tensor, its image as the kernel was handed it (inputs, initial values) and
// as the call left it (outputs), and each output's FP64 reference and bound.
struct CaseTensors {
  std::vector<std::vector<std::byte>> before, after;  // whole buffer images, per tensor (after: outputs only)
  std::vector<std::vector<double>> ref, bound;        // per tensor (outputs only), the matrix view row-major
  size_t data_start = 0;               // where the data starts in each image (after the guard zone)
};

struct CaseOutcome {
  Verdict verdict = Verdict::pass;
  int call = 0;          // which call (1..4) failed; 0 when passed
  std::string detail;    // one line for humans
  CompareStats stats;
  double seconds = 0;
  CaseTensors tensors;   // only with keep_tensors
};

// The candidate calls one case makes (docs/cases.md): 1 fresh, 2 fresh
// inputs, 3 a sparse change, and for a deterministic spec 4, call 3 again;
// a confirmation run makes one.
inline int calls_per_case(const ExecOptions& opt) {
  return opt.first_call_inputs_of > 1 ? 1 : opt.deterministic ? 4 : 3;
}

// Cases small enough to plan: their copies cost less than the turns they
// save (Op::plannable: by default up to 2^28 of work and 4 MiB of tensors).
bool plannable(const Op& op, const Case& c);
// Whether planning pays on this backend with a worker: where two processes
// take turns on a device (cuda). On the host there are no turns to save, and
// the copies cost more than call by call (docs/isolation.md, Cost).
inline bool planning_pays(BackendKind kind) { return kind == BackendKind::cuda; }

// A cached_result verdict says call N answered with call N-1's output. A
// kernel whose output ignores the input that changed does the same without
// keeping anything, so where the runner can start the candidate afresh the
// case's call-N inputs are given to a fresh process as its first call: the
// same wrong values there make the verdict theirs (mismatch, ...); a correct
// answer confirms the cache. run_case and run_cases do this; in process the
// label stands.
void confirm_cached(const Op& op, Backend& backend, Runner& runner, const Case& c, const ExecOptions& opt,
                    CaseOutcome& out);

// One line on a judged call's bad elements: how many, the worst, the first.
std::string describe_bad(const CompareStats& s, const Case& c);

// Throws InfraError when the backend cannot hold the case or breaks.
CaseOutcome run_case(const Op& op, Backend& backend, Runner& runner, const Case& c, const ExecOptions& opt);

// The outcomes of run_case for each case, in order, with every case's
// buffers held at once, ten copies of each tensor (keep them small). Every
// call is made even after an earlier call of its case failed (the outcome is
// the first failure's); a crash or hang ends its case. A case's seconds are an
// equal share of the whole.
std::vector<CaseOutcome> run_cases(const Op& op, Backend& backend, Runner& runner, std::span<const Case> cases,
                                   const ExecOptions& opt);

// A deadline stopped run_cases: the cases before `finished.size()` are whole
// (their outcomes here), that one was running, the rest never started.
struct CasesStopped : DeadlineReached {
  CasesStopped(const std::string& what, std::vector<CaseOutcome> done)
      : DeadlineReached(what), finished(std::move(done)) {}
  std::vector<CaseOutcome> finished;
};

// run_cases of the one case where it is plannable, run_case otherwise: with a
// worker, a small case's calls take one exchange.
CaseOutcome run_case_planned(const Op& op, Backend& backend, Runner& runner, const Case& c, const ExecOptions& opt);

}  // namespace assay
