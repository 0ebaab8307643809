#include "ops/unary/unary_fuzz.h"

#include "ops/rows/rows_fuzz.h"
#include "ops/unary/unary_sweep.h"

namespace assay::unary {
namespace {

// x's and y's layouts vary (never broadcast: y must not alias x); `base`
// gives the dtypes (the spec's when decoding, the case's own when mutating).
rows::Codec codec(const Parts& base) {
  rows::Codec k;
  k.layouts = 2, k.element_tensors = 2;
  k.recipes = std::vector<Recipe>(std::begin(kRecipes), std::end(kRecipes));
  k.make = [base](const rows::Genome& g) {
    Parts p = base;
    p.shape = g.shape, p.x = g.layouts[0], p.y = g.layouts[1];
    p.x.broadcast = p.y.broadcast = false;
    p.recipe = g.recipe, p.seed = g.seed;
    return make_case(p);
  };
  k.genome = [](const Case& c) {
    const Parts p = parts_of(c);
    return rows::Genome{p.shape, {p.x, p.y}, p.recipe, p.seed};
  };
  k.huge_case_fits = [](const Case& c, const SweepTarget& t) { return huge_case_fits(c, t); };
  return k;
}

}  // namespace

bool is_huge(const Case& c, const CodecLimits& lim) { return rows::is_huge(c, lim); }

Case decode(const uint8_t* data, size_t size, const Spec& spec, const CodecLimits& lim) {
  return rows::decode(codec(plain_parts(spec, Shape{}, "fuzz")), data, size, lim);
}

std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim) { return rows::encode(codec(Parts{}), c, lim); }

Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) {
  Parts base = parts_of(c);
  base.origin = "fuzz", base.keep = Keep{};
  return rows::mutate(codec(base), c, random, lim);
}

std::vector<Case> seed_cases(const Spec& spec) {
  std::vector<Case> out;
  for (int64_t n : {1, 5, 33})
    for (int64_t rows : {1, 4}) {
      Parts p = plain_parts(spec, Shape{false, 1, rows, n}, "fuzz seed");
      p.recipe = Recipe::offset, p.seed = uint64_t(n * 16 + rows);
      if (auto fitted = fit_requires(make_case(p), spec)) out.push_back(*fitted);
    }
  return out;
}

}  // namespace assay::unary
