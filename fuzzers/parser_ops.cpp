// The parser fuzzers (scripts/fuzz-parsers.sh) link the spec, case and
// requires parsers without the executor, references or CUDA. A spec names an
// op, and the op checks its own keys: this stand-in registers "gemm" with
// GEMM's spec rules (no keys of its own; dtypes a, b, c; requires over m, n,
// k, alpha, beta and A, B, C), so the fuzzers reach the same checks as assay.
// Nothing else of an op is reachable from the parsers; those methods abort.
#include <cstdio>
#include <cstdlib>

#include "ops/op.h"

namespace {

[[noreturn]] void unreachable(const char* what) {
  std::fprintf(stderr, "parser_ops: %s is not part of the parser fuzzers\n", what);
  std::abort();
}

struct GemmNames final : assay::EvalContext {
  std::optional<double> variable(std::string_view n) const override {
    if (n == "m" || n == "n" || n == "k" || n == "alpha" || n == "beta") return 0.0;
    return std::nullopt;
  }
  std::optional<assay::TensorGeom> tensor(std::string_view n) const override {
    if (n == "A" || n == "B" || n == "C") return assay::TensorGeom{};
    return std::nullopt;
  }
};

class ParserGemm final : public assay::Op {
 public:
  explicit ParserGemm(const assay::Spec& spec) { assay::check_spec_keys(spec, {}, {"a", "b", "c"}); }
  std::string_view name() const override { return "gemm"; }
  void validate(const assay::Case&) const override {}
  std::unique_ptr<assay::EvalContext> names_context() const override { return std::make_unique<GemmNames>(); }
  std::vector<assay::Case> sweep(const assay::Spec&, uint64_t, const assay::SweepTarget&) const override { unreachable("sweep"); }
  std::optional<assay::Case> random_case(const assay::Spec&, uint64_t, uint64_t, const assay::GenLimits&) const override {
    unreachable("random_case");
  }
  std::optional<assay::Case> fit_requires(const assay::Case&, const assay::Spec&) const override { unreachable("fit_requires"); }
  bool huge_case_fits(const assay::Case&, const assay::SweepTarget&) const override { unreachable("huge_case_fits"); }
  double work(const assay::Case&) const override { unreachable("work"); }
  double case_bytes(const assay::Case&) const override { unreachable("case_bytes"); }
  double host_bytes(const assay::Case&, assay::BackendKind) const override { unreachable("host_bytes"); }
  double default_timeout(const assay::Case&, assay::BackendKind) const override { unreachable("default_timeout"); }
  assay::RecipeParams recipe_params(const assay::Case&, int) const override { unreachable("recipe_params"); }
  std::vector<std::vector<double>> reference(assay::Backend&, const assay::Case&,
                                             std::span<const std::byte* const>) const override {
    unreachable("reference");
  }
  assay::CompareStats judge(assay::Backend&, const assay::JudgeInput&) const override { unreachable("judge"); }
  assay::Case resize(const assay::Case&, std::span<const int64_t>, bool) const override { unreachable("resize"); }
  std::vector<assay::Case> simplifications(const assay::Case&) const override { unreachable("simplifications"); }
  assay::Case with_layout(const assay::Case&, int, bool, int64_t, int64_t) const override { unreachable("with_layout"); }
  assay::Case decode(const uint8_t*, size_t, const assay::Spec&, const assay::CodecLimits&) const override {
    unreachable("decode");
  }
  std::vector<uint8_t> encode(const assay::Case&, const assay::CodecLimits&) const override { unreachable("encode"); }
  assay::Case mutate(const assay::Case&, uint64_t, const assay::CodecLimits&) const override { unreachable("mutate"); }
  std::vector<assay::Case> seed_cases(const assay::Spec&) const override { unreachable("seed_cases"); }
  assay::baseline::BaselineResult run_baseline(std::string_view, assay::Backend&, assay::Runner&, const assay::Spec&,
                                               const assay::baseline::BaselineOptions&) const override {
    unreachable("run_baseline");
  }
};

}  // namespace

ASSAY_REGISTER_OP("gemm", [](const assay::Spec& s) -> std::shared_ptr<const assay::Op> {
  return std::make_shared<ParserGemm>(s);
});
