// assay bench (issue #16, docs/bench.md): a candidate kernel timed against a
// baseline (another kernel spec of the same op, or the op's own reference)
// on the same cases, by a harness the candidate cannot fool:
//   - every benched shape passes the gate first (the spec's declared precision);
//   - inputs rotate over several drawn sets, and every timed call's output is
//     captured right after it and verified (bitwise against the set's judged
//     output, or judged in full);
//   - the worker's timestamps are cross-checked, batch by batch, against
//     the harness's own clock: work outside the timed calls or a forged
//     timer is `timing_escape`;
//   - a time below the roofline's floor is `impossible_speed`.
// Cold runs (the cache overwritten before each call) and hot runs (back to
// back) are both timed; the verdict per shape compares the cold runs.
#pragma once
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "bench/device_peaks.h"
#include "bench/sm_clock.h"
#include "bench/timing_stats.h"
#include "case/case.h"
#include "exec/loader.h"
#include "spec/spec.h"

namespace assay::bench {

// The verdicts of a shape besides the gate's: the speed ones, and the bench's own failures.
inline constexpr std::string_view kFaster = "FASTER", kSlower = "SLOWER", kSame = "SAME";
inline constexpr std::string_view kTimingEscape = "timing_escape", kImpossibleSpeed = "impossible_speed";
inline constexpr std::string_view kBaselineFailed = "baseline_failed";
// Faster on inputs it has seen than on any fresh ones: a result remembered, not computed.
inline constexpr std::string_view kCachedResult = "cached_result";
// The first-sight probe: this many fresh input sets, each called once, cold,
// after the timed batches; a cold median below kFirstSightShare of the
// fastest of them is kCachedResult (a correct kernel does the same work on
// any inputs drawn alike, so its repeats are no faster than its first calls).
// The verdict needs kFirstSightProbes probes in a row, each on sets drawn
// anew, to say so.
inline constexpr int kFirstSightSets = 3;
inline constexpr int kMaxInputSets = 4;  // --input-sets; with the probes, within the worker's kMaxSets
inline constexpr double kFirstSightShare = 0.8;
inline constexpr int kFirstSightProbes = 3;
inline constexpr std::string_view kTimed = "timed";  // a side's verdict when it was timed without fault

struct BenchOptions {
  std::vector<BenchShape> shapes;  // empty: the spec's `bench:` list, else the op's defaults
  StoppingRule rule;               // per side and mode (cold, hot)
  double warmup_seconds = 0.1;
  int input_sets = 2;              // 2 to kMaxInputSets
  double batch_seconds = 0.02;     // a batch of calls lasts about this long
  std::optional<double> require_speedup;
  uint64_t seed = 1;
  LoaderOptions loader;
  std::filesystem::path out_dir = "assay-out";  // the workers' logs
  std::optional<double> tolerance_scale;
  double capture_bytes = 0;        // room for a batch's captured outputs; 0: 4 GiB on cuda, 512 MiB on the host
};

// One kernel (or the reference) on one shape.
struct BenchSide {
  std::string name, spec;
  std::string verdict = std::string(kTimed);  // or a gate verdict, timing_escape, impossible_speed, not_run
  std::string detail;
  TimeSummary cold, hot;
  StopReason cold_stop = StopReason::not_yet, hot_stop = StopReason::not_yet;
  std::vector<double> first_sight;  // seconds of the calls on fresh input sets (kernels only)
  double first_sight_repeat = 0;    // median seconds of the same batch's calls on inputs it had seen
  int64_t discarded = 0;           // samples dropped while the GPU throttled
  std::optional<double> clock_mhz;  // SM clock after the last batch (cuda, NVML)
  bool timed() const { return verdict == kTimed; }
};

struct ShapeResult {
  BenchShape sizes;
  std::string shape;      // "m=4096 n=4096 k=4096"
  std::string case_line;  // the case as `assay repro` reads it
  double flops = 0, bytes = 0;
  double floor_seconds = 0;  // the roofline's: no correct kernel is faster
  BenchSide candidate, baseline;
  std::string verdict, detail;  // FASTER, SLOWER, SAME; or why there is no speed verdict
  std::optional<SpeedComparison> speed;
};

struct BenchReport {
  std::string backend;
  DevicePeaks peaks;
  std::optional<ClockReading> clock;  // at the start (cuda)
  std::string clock_note;             // why there is none
  std::string inputs;                 // the value distribution
  std::string candidate, candidate_spec, baseline, baseline_spec;
  std::vector<ShapeResult> shapes;
  std::optional<double> geomean_speedup;  // over shapes with a speed verdict
  std::optional<double> require_speedup;
  std::optional<bool> claim_holds;
  std::string setup_error;
  int setup_exit = 0;
  // 0: every shape timed (and the claim holds, when one is required); 1: a
  // shape failed or the claim does not hold; 2 or 3: setup (bad input, machine).
  int exit_code() const;
};

// The harness's own steps between timed calls (input-set copies, flush,
// capture), measured with no call: what the cross-check allows for.
struct StepCost {
  double fixed_s = 0;  // per batch: the exchange beyond the worker's span
  double step_s = 0;   // per call: the steps between two calls
};
// A batch's timestamps (the worker's: each call's seconds and their span)
// against the harness's own wall clock around the exchange: "" when they
// agree, else why not. Work outside the timed calls (another stream or
// thread) makes the wall clock longer than the span; a forged timer makes
// the span or the calls shorter than the truth. wait_s: the part of the wall
// time the worker's serving thread and the harness's spent waiting for a CPU
// (BatchTimes::wait_s), excused in both rules. The bench calls it twice: a
// batch that fails with wait_s = 0 but passes with the wait excused is the
// machine's doing and is dropped; it never gives samples, so a kernel that
// makes its own thread wait (to hide work in the wait) gains nothing.
std::string cross_check(std::span<const double> call_s, double span_s, double wall_s, const StepCost& cost,
                        double wait_s = 0);

// `baseline`: nullptr to time the op's own reference. Never throws for the
// kernels' faults (they are the shapes' verdicts); InputError for bad specs
// or shapes, InfraError when the machine cannot run it.
BenchReport run_bench(const Spec& candidate, const Spec* baseline, Backend& backend, const BenchOptions& opt);

}  // namespace assay::bench
