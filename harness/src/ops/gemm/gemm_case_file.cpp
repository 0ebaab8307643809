// Case files of version 1 (before the generic case): GEMM's own keys,
// read as the same GEMM case (docs/cases.md, "Version 1 files"). Apart from
// the op so that the parser fuzzers (scripts/fuzz-parsers.sh) link it alone.
#include "core/error.h"
#include "core/yaml_input.h"
#include "ops/gemm/gemm_problem.h"

namespace assay::gemm {
namespace {

using yaml_input::Field;
using yaml_input::Fields;

// Case files of version 1 (before the generic case) held GEMM's own keys:
// m, n, k, dtypes {a, b, c}, layout {a, b, c} of {row_stride, col_stride,
// offset}, alpha, beta and keep {a, b, c}. They read as the same GEMM case.
Case read_v1(const Fields& top) {
  constexpr int64_t kMaxDim = int64_t(1) << 31, kMaxExtent = int64_t(1) << 40;
  top.only({"assay_case", "op", "spec", "m", "n", "k", "dtypes", "layout", "alpha", "beta", "recipe", "seed",
            "keep", "origin"});
  if (auto* f = top.optional("op"))
    if (top.string(*f) != "gemm") top.fail(*f, "unknown op " + yaml_input::quote(top.string(*f)) + " (known: gemm)");
  Problem p;
  p.m = top.integer(top.required("m"), 0, kMaxDim);
  p.n = top.integer(top.required("n"), 0, kMaxDim);
  p.k = top.integer(top.required("k"), 0, kMaxDim);
  Fields d = top.nested(top.required("dtypes"));
  d.only({"a", "b", "c"});
  DType* types[3] = {&p.a_type, &p.b_type, &p.c_type};
  Layout* layouts[3] = {&p.a, &p.b, &p.c};
  const char* keys[3] = {"a", "b", "c"};
  for (int i = 0; i < 3; ++i) *types[i] = *parse_dtype(d.choice(d.required(keys[i]), {"f64", "f32", "f16", "bf16"}));
  Fields l = top.nested(top.required("layout"));
  l.only({"a", "b", "c"});
  for (int i = 0; i < 3; ++i) {
    Fields f = l.nested(l.required(keys[i]));
    f.only({"row_stride", "col_stride", "offset"});
    layouts[i]->row_stride = f.integer(f.required("row_stride"), 0, kMaxExtent);
    layouts[i]->col_stride = f.integer(f.required("col_stride"), 0, kMaxExtent);
    layouts[i]->offset = f.integer(f.required("offset"), 0, kMaxExtent);
  }
  p.alpha = top.real(top.required("alpha"));
  p.beta = top.real(top.required("beta"));
  if (auto* f = top.optional("keep")) {
    Fields kf = top.nested(*f);
    kf.only({"a", "b", "c"});
    for (int t = 0; t < 3; ++t)
      if (auto* g = kf.optional(keys[t])) p.keep[size_t(t)] = read_keep(kf, *g);
  }
  return to_case(p);  // recipe, seed and origin: read by the caller
}

}  // namespace

[[maybe_unused]] static const bool kReadsV1 = register_legacy_case_reader(1, read_v1);

}  // namespace assay::gemm
