// Each published rule as the candidate's op has it (ops/<op>/): the rules
// are written per problem (KernelBench's shape, the tutorial's sizes), so
// each op carries its own, and these only dispatch.
#include "baseline/baseline.h"

#include "ops/op.h"

namespace assay::baseline {

BaselineResult run_kernelbench(Backend& backend, Runner& runner, const Spec& spec, const BaselineOptions& opt) {
  return op_of(spec).run_baseline("kernelbench", backend, runner, spec, opt);
}
BaselineResult run_tutorial(Backend& backend, Runner& runner, const Spec& spec, const BaselineOptions& opt) {
  return op_of(spec).run_baseline("tutorial", backend, runner, spec, opt);
}
BaselineResult run_assert_close(Backend& backend, Runner& runner, const Spec& spec, const BaselineOptions& opt) {
  return op_of(spec).run_baseline("assert_close", backend, runner, spec, opt);
}
BaselineResult run_deepgemm(Backend& backend, Runner& runner, const Spec& spec, const BaselineOptions& opt) {
  return op_of(spec).run_baseline("deepgemm", backend, runner, spec, opt);
}

}  // namespace assay::baseline
