// The verdict classes a case can get, most severe first. Names are the
// public vocabulary of reports, case files and specs' `expect`.
#pragma once
#include <optional>
#include <string_view>

namespace assay {

enum class Verdict {
  pass,
  crash,                // the candidate's process died (signal, abort, exit, sticky CUDA error)
  hang,                 // the call did not finish within its timeout
  cuda_error,           // a CUDA call or launch failed during the candidate's call
  kernel_error,         // assay_run returned an error code
  out_of_bounds_write,  // a guard zone or padding between rows changed
  input_modified,       // an input tensor (or its padding) changed
  rejected,             // ASSAY_UNSUPPORTED for a case inside the spec's `requires`
  unwritten_output,     // output elements still hold the poison pattern
  stale_result,         // a later call left the output as it found it
  cached_result,        // a later call wrote an earlier call's answer
  nan_mismatch,         // NaN/Inf class differs from the reference
  mismatch,             // finite values outside the tolerance
  nondeterministic,     // a bitwise repeat gave different bits
  unordered_output,     // outputs changed after the call's stream finished (work on another stream)
};

std::string_view name(Verdict v);
std::optional<Verdict> parse_verdict(std::string_view s);
inline constexpr Verdict all_verdicts[] = {
    Verdict::pass, Verdict::crash, Verdict::hang, Verdict::cuda_error, Verdict::kernel_error, Verdict::out_of_bounds_write,
    Verdict::input_modified, Verdict::rejected, Verdict::unwritten_output, Verdict::stale_result,
    Verdict::cached_result, Verdict::nan_mismatch, Verdict::mismatch, Verdict::nondeterministic,
    Verdict::unordered_output};

}  // namespace assay
