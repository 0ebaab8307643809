#include "shrink/trials.h"

#include <algorithm>


namespace assay::shrink_detail {

bool inside_spec(const Op& op, const Spec& spec, const Case& c) {
  if (spec.requires_.empty()) return true;
  const std::unique_ptr<EvalContext> ctx = op.context(c);
  return std::all_of(spec.requires_.begin(), spec.requires_.end(), [&](auto& r) { return r.holds(*ctx); });
}

// The YAML text names everything that makes a case, the keep lists included.
std::string Trials::key(const Case& c) {
  Case k = c;
  k.origin.clear();
  return to_yaml(k);
}

bool Trials::still_fails(const Case& c) {
  if (exhausted()) return false;
  if (!tried_.insert(key(c)).second) return false;
  if (!inside_spec(op_, spec_, c)) return false;
  ++attempts_;
  CaseOutcome o;
  try {
    o = clock_.run(probe_, c);
  } catch (const DeadlineReached&) {
    stopped_ = true;  // the shrink ends with its best case so far
    return false;
  }
  if (o.verdict != target_) return false;
  last_ = o;
  return true;
}

}  // namespace assay::shrink_detail
