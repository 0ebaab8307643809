// The last shrink step: cut the input elements allowed to be nonzero to the
// fewest that still fail (Case::keep, case/values.h). A hash interval is
// bisected first (cheap on big tensors), then delta debugging (ddmin) over
// the explicit list of kept (tensor, row, col) positions.
#pragma once
#include <functional>
#include <string>

#include "case/case.h"

namespace assay::shrink_detail {

// `take(c)` runs c and returns true when it fails the same way (and then
// becomes the shrinker's best case). Returns the note for the explanation,
// e.g. "3 nonzeros in A, 2 in B suffice (every other input element is 0)",
// or "" when nothing could be cut.
std::string cut_nonzeros(const Case& start, const std::function<bool(const Case&)>& take);

}  // namespace assay::shrink_detail
