#include "ops/reduce/reduce_fuzz.h"

#include <algorithm>

#include "ops/reduce/reduce_sweep.h"

namespace assay::reduce {

rows::Codec codec(const Spec& spec, const Settings& s) {
  rows::Codec k;
  k.layouts = 2;            // x, y
  k.element_tensors = 1.0;  // x; y has one value per row
  k.recipes.assign(std::begin(kRecipes), std::end(kRecipes));
  const auto [x_type, y_type] = spec_dtypes(spec, s);
  const int64_t max_n = max_row_length(spec, s);
  const bool extreme = is_extreme(s.op);
  k.make = [x_type, y_type, max_n, extreme](const rows::Genome& g) {
    Parts p;
    p.shape = g.shape;
    p.shape.n = std::min(p.shape.n, max_n);
    if (extreme) p.shape.n = std::max<int64_t>(p.shape.n, 1);  // no value at n = 0
    p.x_type = x_type, p.y_type = y_type;
    if (g.layouts.size() >= 2) p.x = g.layouts[0], p.y = g.layouts[1];
    p.y.col_major = p.y.broadcast = p.x.broadcast = false;
    if (!p.shape.batched) p.x.batch_gap = p.y.batch_gap = 0;
    p.recipe = g.recipe, p.seed = g.seed, p.origin = "fuzz";
    return make_case(p);
  };
  k.genome = [](const Case& c) {
    const Parts p = parts_of(c);
    return rows::Genome{p.shape, {p.x, p.y}, p.recipe, p.seed};
  };
  k.huge_case_fits = [](const Case& c, const SweepTarget& t) { return huge_case_fits(c, t); };
  return k;
}

std::vector<Case> seed_cases(const Spec& spec, const Settings& s) {
  std::vector<Case> out;
  for (int64_t n : {1, 7, 33})
    for (int64_t rows : {1, 4}) {
      Parts p = plain_parts(spec, s, rows::Shape{false, 1, rows, n}, "fuzz seed");
      p.recipe = Recipe::ints, p.seed = uint64_t(n * 16 + rows);
      if (auto fitted = fit_requires(make_case(p), spec)) out.push_back(*fitted);
    }
  return out;
}

}  // namespace assay::reduce
