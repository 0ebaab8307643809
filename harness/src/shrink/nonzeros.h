// The last shrink step: cut the input elements allowed to be nonzero to the
// fewest that still fail (CaseTensor::keep, case/values.h). The tensors cut
// are those whose values the kernel reads: inputs, and outputs whose initial
// value it reads (Op::reads_initial). A hash interval is
// bisected first (cheap on big tensors), then delta debugging (ddmin) over
// the explicit list of kept (tensor, row, col) positions.
#pragma once
#include <functional>
#include <string>

#include "case/case.h"
#include "ops/op.h"

namespace assay::shrink_detail {

// `take(c)` runs c and returns true when it fails the same way (and then
// becomes the shrinker's best case). Returns the note for the explanation,
// e.g. "3 nonzeros in X, 2 in Y suffice (every other input element is 0)"
// (an output's initial value is named with a 0: "Z0"), or "" when nothing
// could be cut.
std::string cut_nonzeros(const Op& op, const Case& start, const std::function<bool(const Case&)>& take);

}  // namespace assay::shrink_detail
