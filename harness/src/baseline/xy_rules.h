// The published checks as they run an op of one input x and one output y
// (softmax, reduce, unary): each case drawn from randn, the candidate called
// once, every element of y tested against the framework's answer. The
// families say which cases, which answer and which element test their
// rules use (docs/baselines.md); this runs them the same way for each.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "baseline/baseline.h"
#include "baseline/common.h"
#include "case/case.h"

namespace assay {
class Op;
class Runner;
}  // namespace assay

namespace assay::baseline {

inline constexpr int kKernelBenchTrials = 5;

// One case of a rule, named as the rule reports it ("trial 2", "size 512",
// "shape 7x13 x transposed"); no case: outside the spec's requires or the
// backend's limits (counted as skipped).
struct XYCase {
  std::string where;
  std::optional<Case> c;
};

// The element test of one case: passes(got, want), and its name in details.
struct ElementTest {
  std::function<bool(double got, double want)> passes;
  std::string name;
};

// The tests the rules apply: torch.allclose(want, got, tol, tol) (KernelBench),
// assert_close's default tolerances for y's dtype, and one absolute
// tolerance that a NaN passes (a comparison with NaN is false).
ElementTest allclose_test(double tol);
ElementTest assert_close_test(DType y);
ElementTest nan_blind_absolute_test(double tol);
// KernelBench's and the tutorials' tolerance: 1e-2 for 16-bit types, else 1e-4.
double rule_tolerance(DType t);

struct XYChecks {
  int x = 0, y = 1;  // the tensors' indices in the case
  // The framework's answer for every element of y, from x as stored.
  std::function<std::vector<double>(const Case&, const Tensor& x)> reference;
  // One failing element for humans: "rows=.. n=..: y[..] = got, expected want (test)".
  std::function<std::string(const Case&, int64_t i, double got, double want, const std::string& test)> detail;
  std::function<ElementTest(const Case&)> test;
  // KernelBench's order: the reference's output is stored and handed back
  // to the pool before the candidate's is allocated, so a kernel that
  // leaves y unwritten finds the answer there.
  bool reference_first = false;
};

// The rules' case lists; `make` builds (and fits) one, nullopt where it
// does not fit. Seeds as the families always drew them.
// KernelBench: 5 trials of one case, seeds hash3(seed, salt, trial).
std::vector<XYCase> kernelbench_trials(const Case& base, uint64_t seed, uint64_t salt);
// The CUDA tutorials: square powers of two, 128 to 4096.
std::vector<XYCase> tutorial_cases(uint64_t seed, const std::function<std::optional<Case>(int64_t size)>& make);
// assert_close as OpInfo tests run it: five shapes, each contiguous, with x
// transposed (variant 1) and with x sliced from a wider tensor (variant 2),
// one draw per shape.
std::vector<XYCase> assert_close_cases(
    uint64_t seed, const std::function<std::optional<Case>(int64_t rows, int64_t n, int variant)>& make);

// Runs the cases in order until one fails (its call, or an element),
// counting cases run and skipped into `res`; `res.caught`, `failed_case`
// and `detail` say which and why ("where: what"). A rule none of whose
// cases fits is not applicable: it cannot pass a kernel it never ran.
void run_xy_cases(const XYChecks& checks, const Op& op, Backend& backend, Runner& runner, double timeout_s,
                  const std::vector<XYCase>& cases, BaselineResult& res);

// The same checks for an op of several inputs and outputs (moe_topk: logits
// and bias in, weights and indices out): input j is drawn from randn's
// stream j, each output in `outputs` is tested element by element.
// run_xy_cases is this with one of each.
struct CaseChecks {
  std::vector<int> inputs, outputs;  // the tensors' indices in the case
  // Each output's answer (in `outputs`' order) from the inputs as stored;
  // t holds every tensor of the case by index (outputs not yet written).
  std::function<std::vector<std::vector<double>>(const Case&, std::span<const Tensor> t)> reference;
  std::function<std::string(const Case&, int tensor, int64_t i, double got, double want, const std::string& test)>
      detail;
  std::function<ElementTest(const Case&, int tensor)> test;
  bool reference_first = false;  // as in XYChecks
  // Where set: the inputs' values (in `inputs`' order, each its matrix view
  // row-major) instead of randn's, for rules whose harness prepares them
  // (fp8_gemm's callers quantize randn per block).
  std::function<std::vector<std::vector<double>>(const Case&)> draw;
  // Where set: a rule over a whole output instead of each element
  // (DeepGEMM's difference): "" when it passes, else why not.
  std::function<std::string(const Case&, int tensor, const std::vector<double>& got,
                            const std::vector<double>& want)>
      whole;
};
void run_cases(const CaseChecks& checks, const Op& op, Backend& backend, Runner& runner, double timeout_s,
               const std::vector<XYCase>& cases, BaselineResult& res);

}  // namespace assay::baseline
