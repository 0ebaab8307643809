// Text names of the enums that appear in specs, case files and reports.
#include <array>
#include <utility>

#include "case/values.h"
#include "core/dtype.h"
#include "judge/verdict.h"
#include "spec/spec.h"

namespace assay {
namespace {

template <class E, size_t N>
std::optional<E> lookup(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s) {
  for (auto& [e, n] : table)
    if (n == s) return e;
  return std::nullopt;
}
template <class E, size_t N>
std::string_view lookup(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (auto& [v, n] : table)
    if (v == e) return n;
  return "?";
}

constexpr std::array<std::pair<DType, std::string_view>, 8> dtypes{{{DType::f64, "f64"},
                                                                   {DType::f32, "f32"},
                                                                   {DType::f16, "f16"},
                                                                   {DType::bf16, "bf16"},
                                                                   {DType::i64, "i64"},
                                                                   {DType::i32, "i32"},
                                                                   {DType::e4m3, "e4m3"},
                                                                   {DType::e5m2, "e5m2"}}};
constexpr std::array<std::pair<Compute, std::string_view>, 5> computes{{{Compute::f64, "f64"},
                                                                       {Compute::f32, "f32"},
                                                                       {Compute::tf32, "tf32"},
                                                                       {Compute::f16, "f16"},
                                                                       {Compute::bf16, "bf16"}}};
constexpr std::array<std::pair<Recipe, std::string_view>, 5> recipes{{{Recipe::ints, "ints"},
                                                                     {Recipe::uniform, "uniform"},
                                                                     {Recipe::mixed, "mixed"},
                                                                     {Recipe::specials, "specials"},
                                                                     {Recipe::offset, "offset"}}};
constexpr std::array<std::pair<BackendKind, std::string_view>, 2> backends{
    {{BackendKind::cuda, "cuda"}, {BackendKind::host, "host"}}};
constexpr std::array<std::pair<Verdict, std::string_view>, 15> verdicts{{
    {Verdict::pass, "pass"},
    {Verdict::crash, "crash"},
    {Verdict::hang, "hang"},
    {Verdict::cuda_error, "cuda_error"},
    {Verdict::kernel_error, "kernel_error"},
    {Verdict::out_of_bounds_write, "out_of_bounds_write"},
    {Verdict::input_modified, "input_modified"},
    {Verdict::rejected, "rejected"},
    {Verdict::unwritten_output, "unwritten_output"},
    {Verdict::stale_result, "stale_result"},
    {Verdict::cached_result, "cached_result"},
    {Verdict::nan_mismatch, "nan_mismatch"},
    {Verdict::mismatch, "mismatch"},
    {Verdict::nondeterministic, "nondeterministic"},
    {Verdict::unordered_output, "unordered_output"},
}};

}  // namespace

std::string_view name(DType t) { return lookup(dtypes, t); }
std::string_view name(Compute c) { return lookup(computes, c); }
std::string_view name(Recipe r) { return lookup(recipes, r); }
std::string_view name(BackendKind b) { return lookup(backends, b); }
std::string_view name(Verdict v) { return lookup(verdicts, v); }
std::optional<DType> parse_dtype(std::string_view s) { return lookup(dtypes, s); }
std::optional<Compute> parse_compute(std::string_view s) { return lookup(computes, s); }
std::optional<Recipe> parse_recipe(std::string_view s) { return lookup(recipes, s); }
std::optional<Verdict> parse_verdict(std::string_view s) { return lookup(verdicts, s); }

}  // namespace assay
