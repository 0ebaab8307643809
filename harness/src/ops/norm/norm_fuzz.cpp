#include "ops/norm/norm_fuzz.h"

#include "ops/norm/norm_problem.h"
#include "ops/norm/norm_sweep.h"

namespace assay::norm {
namespace {

// The varied tensors, in genome order.
std::vector<int> varied(bool rms) { return rms ? std::vector<int>{X, W, Y} : std::vector<int>{X, W, B, Y}; }

}  // namespace

rows::Codec codec(const Spec& spec, bool rms) {
  rows::Codec k;
  k.layouts = varied(rms).size();
  k.element_tensors = 2;
  k.recipes.assign(std::begin(kRecipes), std::end(kRecipes));
  k.make = [spec, rms](const rows::Genome& g) {
    Parts p = plain_parts(spec, rms, g.shape, "fuzz");
    const std::vector<int> v = varied(rms);
    for (size_t i = 0; i < v.size() && i < g.layouts.size(); ++i) {
      rows::Layout l = g.layouts[i];
      if (slot_kind(v[i]) == rows::Kind::column) l.col_major = false, l.batch_gap = 0;
      else l.broadcast = false;
      if (!g.shape.batched) l.batch_gap = 0;
      p.layout[v[i]] = l;
    }
    p.recipe = g.recipe, p.seed = g.seed;
    return make_case(p);
  };
  k.genome = [rms](const Case& c) {
    const Parts p = parts_of(c);
    rows::Genome g;
    g.shape = p.shape;
    for (int s : varied(rms)) g.layouts.push_back(p.layout[s]);
    g.recipe = p.recipe, g.seed = p.seed;
    return g;
  };
  k.huge_case_fits = [](const Case& c, const SweepTarget& t) { return huge_case_fits(c, t); };
  return k;
}

std::vector<Case> seed_cases(const Spec& spec, bool rms) {
  std::vector<Case> out;
  for (int64_t n : {1, 7, 33})
    for (int64_t r : {1, 4}) {
      Parts p = plain_parts(spec, rms, rows::Shape{false, 1, r, n}, "fuzz seed");
      p.recipe = Recipe::uniform, p.seed = uint64_t(n * 16 + r);
      if (auto fitted = fit_requires(make_case(p), spec)) out.push_back(*fitted);
    }
  return out;
}

}  // namespace assay::norm
