// The seam between the op-generic harness and one op family. Everything an
// op knows lives in harness/src/ops/<op>/ behind this interface: its tensors
// and shape rules, its sweep and random cases, its FP64 reference (host and
// cuda), its tolerance, its shrink moves, its fuzz encoding. The executor,
// gate, shrinker, fuzzer, baselines and reports call only this; none of
// them names an op (scripts/check-op-seam.sh checks that in CI).
//
// An op registers itself with one line in its own folder:
//   ASSAY_REGISTER_OP("softmax", [](const Spec& s) { return std::make_shared<SoftmaxOp>(s, false); });
// docs/adding-an-op.md walks through one.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "baseline/baseline.h"
#include "case/case.h"
#include "core/deadline.h"
#include "exec/runner.h"
#include "judge/compare.h"
#include "spec/requires.h"
#include "spec/spec.h"

namespace assay {

// Where the sweep will run: cases past the ordinary sizes (2^31 elements, a
// dimension past 2^20) are for the cuda backend only, and only those that fit
// `max_bytes` (Op::case_bytes) and `max_host_bytes` (Op::host_bytes).
struct SweepTarget {
  BackendKind backend = BackendKind::host;
  double max_bytes = 0;
  double max_host_bytes = 1e300;
};
struct GenLimits {
  int64_t max_random_dim = 1024;  // random cases stay below this per size
  double max_random_work = 1e9;   // and below this Op::work
};

// The sparse-change call's edit (docs/cases.md): which tensor changes and
// where, drawn per case. tensor < 0: nothing the result reads can change.
struct SparseChange {
  int tensor = -1;
  Patch patch;
};

// The relabelled call (docs/cases.md): where an op has one, call 2's inputs
// are call 1's moved round (Rotation, per tensor; none for outputs it does
// not read) instead of a fresh draw, so that its reference is call 1's moved
// the same way (GEMM: A's rows with C's, B's columns with C's) and need not
// be computed again. The values still move under the candidate: an answer
// kept from call 1 or left in place is wrong at call 2.
struct Relabeling {
  std::vector<Rotation> of;  // per tensor; empty: none (call 2 draws afresh from another seed)
  bool any() const {
    for (const Rotation& r : of)
      if (r.any()) return true;
    return false;
  }
};

// How a judged call's inputs relate to the memo's call (JudgeInput::since_memo).
struct InputDelta {
  enum class Kind { fresh, same, sparse, relabeled };
  Kind kind = Kind::fresh;                 // fresh: unrelated, compute everything afresh
  const SparseChange* change = nullptr;    // sparse: that call's inputs but for this change
  const Relabeling* relabeling = nullptr;  // relabeled: that call's inputs moved round so
};

// What an op keeps of one judged call for the case's next one (Op::judge:
// e.g. GEMM's FP64 products, from which a sparse change's reference is
// derived). The executor holds it for the case's life, the op owns its type.
struct JudgeMemo {
  virtual ~JudgeMemo() = default;
};

// What the executor hands an op to judge one call.
struct JudgeInput {
  const Case& c;
  // Per tensor, where its data starts in the backend's memory: inputs as the
  // kernel was handed them (checked unchanged), inout tensors' initial values
  // redrawn into scratch the kernel never saw; nullptr for pure outputs and
  // for initial values the kernel must not read (Op::reads_initial).
  std::span<const std::byte* const> device;
  // Per tensor, where its data starts in the backend's memory as the call
  // left it (outputs and inout tensors; nullptr for inputs). Judged where it
  // lives (Backend::compare); an op that judges on the host copies it there
  // (output_on_host).
  std::span<const std::byte* const> out;
  std::span<const RecipeParams> params;  // each tensor's draw for this call
  uint64_t seed = 0;                     // ... from this seed
  Compute compute = Compute::f32;
  double scale = 2.0;                    // T, the safety factor (--tolerance-scale)
  Subnormals subnormals = Subnormals::ieee;
  const Deadline& deadline;
  // When set: the FP64 reference and bound of each output (empty vectors for
  // inputs), the matrix view row-major, for dumps.
  std::vector<std::vector<double>>* keep_ref = nullptr;
  std::vector<std::vector<double>>* keep_bound = nullptr;
  // assay bench: also the op's aggregate precision rule, where it has one
  // (GEMM: the RMS error against the declared precision's, docs/tolerance.md).
  bool aggregate_precision = false;
  // The op's memo of the case's previous judged call, which it may read and
  // replace (nullptr: none kept, e.g. outside a case run), and how this
  // call's inputs relate to that call's: the same, a sparse change of them,
  // them relabelled, or fresh (the op then computes everything afresh).
  std::unique_ptr<JudgeMemo>* memo = nullptr;
  InputDelta since_memo{};
  // The sparse change the case's next call makes to these inputs, if it
  // makes one: what a derivation at that call needs of them can be kept
  // now (GEMM: the row of B it changes).
  const SparseChange* upcoming = nullptr;
};

// Structure-aware fuzzing limits (fuzz/campaign.cpp sets them per backend).
struct CodecLimits {
  int64_t max_dim = 256;        // ordinary cases: every size stays below this
  double max_work = 1e300;      // and Op::work at most this,
  double max_elements = 1e300;  // and the tensors' elements at most this
  // Huge cases (a size past max_dim, for index and grid limits): only where
  // huge_case_fits accepts them on this target (cuda, within memory).
  SweepTarget huge{BackendKind::host, 0};
  double max_huge_work = 0;
};

// The least work any correct kernel does for a case, the floor of the
// roofline (assay bench, docs/bench.md): floating-point operations, and the
// bytes it must move at least (every input read once, every output written
// once, an initial value the kernel reads read once).
struct BenchCost {
  double flops = 0;  // 0: not counted for this op (no compute floor)
  double bytes = 0;
};

class Op {
 public:
  virtual ~Op() = default;
  virtual std::string_view name() const = 0;

  // ---- tensors and shapes
  // The case's tensors follow this op's rules (names, roles, shapes from the
  // sizes, dtypes); throws InputError saying what does not (case files).
  virtual void validate(const Case& c) const = 0;
  // Which tensors' names and sizes' names a `requires` may use (spec check).
  virtual std::unique_ptr<EvalContext> context(const Case& c) const;
  virtual std::unique_ptr<EvalContext> names_context() const = 0;

  // ---- cases
  virtual std::vector<Case> sweep(const Spec& spec, uint64_t seed, const SweepTarget& target) const = 0;
  virtual std::optional<Case> random_case(const Spec& spec, uint64_t seed, uint64_t index,
                                          const GenLimits& lim) const = 0;
  // The case itself if it satisfies the spec's requires, else the nearest
  // variant the op finds; nullopt if none.
  virtual std::optional<Case> fit_requires(const Case& c, const Spec& spec) const = 0;
  // Whether a case past the ordinary sizes may run on `target`.
  virtual bool huge_case_fits(const Case& c, const SweepTarget& target) const = 0;

  // ---- costs
  virtual double work(const Case& c) const = 0;         // arithmetic of one call (multiply-adds or elements)
  virtual double case_bytes(const Case& c) const = 0;   // backend memory for one case at its peak
  virtual double host_bytes(const Case& c, BackendKind backend) const = 0;  // the harness's own host memory
  virtual double default_timeout(const Case& c, BackendKind backend) const = 0;  // per call, seconds
  // T, the tolerance's safety factor, where --tolerance-scale does not say
  // (calibrated per op on the H200: docs/tolerance.md).
  virtual double default_scale() const { return 2.0; }
  // Small enough to plan (exec/executor.h): its copies cost less than the turns saved.
  virtual bool plannable(const Case& c) const;

  // ---- values
  virtual RecipeParams recipe_params(const Case& c, int tensor) const = 0;
  // recipe_params with the case's own cut applied (CaseTensor::keep, which
  // the shrinker sets on any input): what every fill draws from.
  RecipeParams params_for(const Case& c, int tensor) const;
  // Whether the kernel must read tensor i's initial value (inout tensors;
  // GEMM's C only when beta != 0). Outputs it must not read are poisoned.
  virtual bool reads_initial(const Case& c, int tensor) const;
  virtual SparseChange sparse_change(const Case& c) const;
  // Call 2 as call 1 moved round (Relabeling); by default none: fresh inputs.
  virtual Relabeling relabeling(const Case& c) const;

  // ---- judging
  // FP64 reference of every output (empty vectors for inputs), the matrix
  // view row-major; `device` as in JudgeInput. For dumps and baselines.
  virtual std::vector<std::vector<double>> reference(Backend& backend, const Case& c,
                                                     std::span<const std::byte* const> device) const = 0;
  // Compares every output of one call with the reference under the op's
  // tolerance. first_bad's `tensor` names the output. The executor may call
  // it while the call's input and guard checks are still on the device
  // (Backend::queue_differences), so it reads the inputs only through
  // in.device (the copies as handed, which the candidate never saw), and a
  // call that then fails those checks has its judgement thrown away.
  virtual CompareStats judge(Backend& backend, const JudgeInput& in) const = 0;

  // ---- shrinking (shrink/shrinker.cpp): the generic moves use these
  // The case with its sizes replaced (in the case's order), each tensor
  // keeping its orientation (padding and offsets too, when keep_layout).
  virtual Case resize(const Case& c, std::span<const int64_t> sizes, bool keep_layout) const = 0;
  // Simpler variants to try, most simplifying first: plain layouts (all,
  // then one tensor at a time), simpler scalars.
  virtual std::vector<Case> simplifications(const Case& c) const = 0;
  // A tensor laid out as the op's plain cases have it (for notes on layouts).
  virtual Case with_layout(const Case& c, int tensor, bool col_major, int64_t pad, int64_t offset) const = 0;

  // ---- fuzzing (fuzz/): bytes <-> cases and the moves that matter
  virtual Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim) const = 0;
  virtual std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim) const = 0;
  virtual Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) const = 0;
  virtual std::vector<Case> seed_cases(const Spec& spec) const = 0;
  virtual bool is_huge(const Case& c, const CodecLimits& lim) const;

  // ---- speed (assay bench, docs/bench.md)
  // Realistic shapes to time when neither the spec nor the command names any.
  virtual std::vector<BenchShape> bench_shapes() const { return {}; }
  // By default no flops, and the bytes of every tensor's elements (plus the
  // initial values read).
  virtual BenchCost bench_cost(const Case& c) const;

  // ---- baselines (baseline/): the published checkers' rules for this op
  // ("kernelbench", "tutorial", "assert_close"), as each is written for it.
  virtual baseline::BaselineResult run_baseline(std::string_view rule, Backend& backend, Runner& runner,
                                                const Spec& spec, const baseline::BaselineOptions& opt) const = 0;
};

using OpFactory = std::function<std::shared_ptr<const Op>(const Spec&)>;

// Registers `factory` under `name` at static initialisation (ASSAY_REGISTER_OP).
bool register_op(std::string_view name, OpFactory factory);
// The op for a spec (its `op` key and op-specific keys); throws InputError
// for an unknown op. Specs made by load_spec carry theirs (Spec::impl).
std::shared_ptr<const Op> make_op(const Spec& spec);
const Op& op_of(const Spec& spec);
// The op a case names, with the defaults of its op-specific spec keys (case
// files replayed without their spec); nullptr when unknown.
std::shared_ptr<const Op> default_op(std::string_view name);
std::vector<std::string> registered_ops();
// The op of a spec without an `op` key (specs from before there were several).
std::string_view default_op_name();

// For ops' own use.
// The case's sizes and scalars as variables, its tensors by name (what
// Op::context gives unless an op says otherwise).
std::unique_ptr<EvalContext> case_context(const Case& c);
// Output `tensor` of a judged call copied to host memory, for an op whose
// judge runs on the host (an order-dependent rule, a user's reference):
// its span's bytes, the data start at the front.
std::vector<std::byte> output_on_host(Backend& backend, const JudgeInput& in, int tensor);
// A backend array of doubles (a reference block) copied into `host`.
void read_doubles(Backend& backend, const double* at, size_t count, double* host);
// The sparse change drawn from the case's seed among `candidates` (tensor
// indices): one element, one row, or 2..8 scattered elements of one of them.
SparseChange draw_sparse_change(const Case& c, const std::vector<int>& candidates);
// Checks a spec read from a file: its keys are the generic ones and
// `op_keys`; `dtypes` names exactly `tensors` (case-insensitive). Throws
// InputError "FILE:LINE: key 'X': problem". FP8 dtypes (e4m3, e5m2) only
// where the op says it takes them.
void check_spec_keys(const Spec& spec, std::initializer_list<std::string_view> op_keys,
                     std::initializer_list<std::string_view> tensors, bool takes_fp8 = false);

#define ASSAY_OP_CONCAT2(a, b) a##b
#define ASSAY_OP_CONCAT(a, b) ASSAY_OP_CONCAT2(a, b)
#define ASSAY_REGISTER_OP(name, factory) \
  [[maybe_unused]] static const bool ASSAY_OP_CONCAT(assay_registered_op_, __LINE__) = ::assay::register_op(name, factory)

}  // namespace assay
