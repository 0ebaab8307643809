// libFuzzer target: the `requires` expression language (issue #3):
// assay::Requirement::parse, check_names and holds against a gemm::Context.
// Bad input may only throw assay::RequiresSyntaxError; any other exception,
// a crash, a sanitizer report, a leak, a hang or running out of memory is a
// finding.
//
// Input: the expression text, optionally followed by a NUL byte and bytes
// that pick the case it is evaluated on (dimensions, dtypes, layouts,
// alpha, beta), kept inside the ranges a case file admits. Without a NUL the
// expression is evaluated on a fixed example case, so plain-text seeds work.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include <fuzzer/FuzzedDataProvider.h>

#include "case/case.h"
#include "ops/gemm/gemm_problem.h"
#include "spec/requires.h"

namespace {

// The bounds parse_case_yaml enforces (harness/src/case/case.cpp).
constexpr int64_t kMaxDim = int64_t(1) << 31;
constexpr int64_t kMaxExtent = int64_t(1) << 40;

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_requires: %s\n%s\n", what, detail.c_str());
  std::abort();
}

assay::gemm::Problem example_case() {
  assay::gemm::Problem c;
  c.m = 64, c.n = 48, c.k = 32;
  c.a_type = assay::DType::f16, c.b_type = assay::DType::f16, c.c_type = assay::DType::f32;
  c.a = {32, 1, 0};
  c.b = {1, 32, 8};
  c.c = {48, 1, 0};
  c.alpha = 1.5, c.beta = 0;
  return c;
}

assay::gemm::Problem fuzzed_case(const uint8_t* data, size_t size) {
  FuzzedDataProvider p(data, size);
  assay::gemm::Problem c;
  auto dim = [&] {  // small values are the interesting ones; now and then a huge one
    return p.ConsumeBool() ? p.ConsumeIntegralInRange<int64_t>(0, 300) : p.ConsumeIntegralInRange<int64_t>(0, kMaxDim);
  };
  auto extent = [&] {
    return p.ConsumeBool() ? p.ConsumeIntegralInRange<int64_t>(0, 300)
                           : p.ConsumeIntegralInRange<int64_t>(0, kMaxExtent);
  };
  auto dtype = [&] {
    constexpr assay::DType all[] = {assay::DType::f64, assay::DType::f32, assay::DType::f16, assay::DType::bf16};
    return p.PickValueInArray(all);
  };
  auto scalar = [&] {
    double v = p.ConsumeFloatingPoint<double>();  // finite, as case files require
    return p.ConsumeBool() ? double(p.ConsumeIntegralInRange<int>(-4, 4)) : v;
  };
  c.m = dim(), c.n = dim(), c.k = dim();
  c.a_type = dtype(), c.b_type = dtype(), c.c_type = dtype();
  for (assay::gemm::Layout* l : {&c.a, &c.b, &c.c}) {
    l->row_stride = extent();
    l->col_stride = extent();
    l->offset = extent();
  }
  c.alpha = scalar();
  c.beta = scalar();
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const void* nul = std::memchr(data, 0, size);
  const size_t text_size = nul ? size_t(static_cast<const uint8_t*>(nul) - data) : size;
  const std::string text(reinterpret_cast<const char*>(data), text_size);
  const assay::gemm::Problem c = nul ? fuzzed_case(data + text_size + 1, size - text_size - 1) : example_case();
  const assay::gemm::Context ctx(c);

  try {
    assay::Requirement r;
    try {
      r = assay::Requirement::parse(text);
    } catch (const assay::RequiresSyntaxError& e) {
      if (e.column < 1) finding("syntax error with a column below 1", e.what());
      return 0;
    }
    if (r.text() != text) finding("text() differs from the parsed text", r.text());
    try {
      r.check_names(ctx);
    } catch (const assay::RequiresSyntaxError&) {
      // Unknown names; evaluating may report them too, and may do nothing else.
      try {
        (void)r.holds(ctx);
      } catch (const assay::RequiresSyntaxError&) {
      }
      return 0;
    }
    // Every name is known: evaluation must give an answer, the same one twice.
    bool first = false, second = false;
    try {
      first = r.holds(ctx);
      second = r.holds(ctx);
    } catch (const assay::RequiresSyntaxError& e) {
      finding("holds() threw after check_names() accepted every name", e.what());
    }
    if (first != second) finding("holds() gave two answers for one case", text);
    // The parsed text parses again to the same verdict.
    if (assay::Requirement::parse(r.text()).holds(ctx) != first) finding("re-parsing changed the verdict", text);
  } catch (const std::exception& e) {
    finding("unexpected exception escaped the requires parser", e.what());
  } catch (...) {
    finding("unexpected non-std exception escaped the requires parser", "");
  }
  return 0;
}
