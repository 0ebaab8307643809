#include "ops/softmax/softmax_fuzz.h"

#include <algorithm>
#include <cstring>

#include "case/rng.h"
#include "ops/rows/rows_fuzz.h"
#include "ops/softmax/softmax_sweep.h"

namespace assay::softmax {
namespace {

// x's and y's layouts vary; the recipes in their enum order (so corpora of
// earlier versions decode to the same cases).
rows::Codec codec(const Spec* spec, bool log) {
  rows::Codec k;
  k.layouts = 2, k.element_tensors = 2;
  k.recipes = {Recipe::ints, Recipe::uniform, Recipe::mixed, Recipe::specials};
  k.make = [spec, log](const rows::Genome& g) {
    Parts p = spec ? plain_parts(*spec, log, g.shape, "fuzz") : Parts{};
    p.log = log, p.shape = g.shape, p.origin = "fuzz";
    p.x = g.layouts[0], p.y = g.layouts[1];
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

Case decode(const uint8_t* data, size_t size, const Spec& spec, bool log, const CodecLimits& lim) {
  return rows::decode(codec(&spec, log), data, size, lim);
}

std::vector<uint8_t> encode(const Case& c, const CodecLimits& lim) { return rows::encode(codec(nullptr, false), c, lim); }

Case mutate(const Case& c, uint64_t random, const CodecLimits& lim) {
  const Parts p = parts_of(c);
  rows::Codec k = codec(nullptr, p.log);
  // A mutant keeps the case's dtypes (its spec's).
  k.make = [p](const rows::Genome& g) {
    Parts q = p;
    q.shape = g.shape, q.x = g.layouts[0], q.y = g.layouts[1];
    q.x.broadcast = q.y.broadcast = false;
    q.recipe = g.recipe, q.seed = g.seed;
    return make_case(q);
  };
  return rows::mutate(k, c, random, lim);
}

std::vector<Case> seed_cases(const Spec& spec, bool log) {
  std::vector<Case> out;
  for (int64_t n : {1, 7, 33})
    for (int64_t rows : {1, 4}) {
      Parts p = plain_parts(spec, log, Shape{false, 1, rows, n}, "fuzz seed");
      p.recipe = Recipe::ints, p.seed = uint64_t(n * 16 + rows);
      if (auto fitted = fit_requires(make_case(p), spec)) out.push_back(*fitted);
    }
  return out;
}

}  // namespace assay::softmax
