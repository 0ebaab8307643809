#include "shrink/shrinker.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"

namespace assay {
namespace {

class Shrinker {
 public:
  Shrinker(const Spec& spec, const CaseProbe& probe, Verdict target, int max_attempts)
      : spec_(spec), probe_(probe), target_(target), max_attempts_(max_attempts) {}

  // Runs c if it is new and inside the spec; true when it fails the same way.
  bool still_fails(const Case& c) {
    if (attempts_ >= max_attempts_) return false;
    Case key = c;
    key.origin.clear();
    if (!tried_.insert(describe(key)).second) return false;
    if (!inside_spec(c)) return false;
    ++attempts_;
    CaseOutcome o = probe_(c);
    if (o.verdict != target_) return false;
    last_ = o;
    return true;
  }
  bool inside_spec(const Case& c) const {
    gemm::Context ctx(c);
    return std::all_of(spec_.requires_.begin(), spec_.requires_.end(), [&](auto& r) { return r.holds(ctx); });
  }
  int attempts() const { return attempts_; }
  const CaseOutcome& last() const { return last_; }

 private:
  const Spec& spec_;
  const CaseProbe& probe_;
  Verdict target_;
  int max_attempts_, attempts_ = 0;
  std::set<std::string> tried_;
  CaseOutcome last_;
};

bool is_col_major(const Layout& l) { return l.row_stride == 1 && l.col_stride != 1; }

// The same case with m, n, k replaced, each tensor keeping its orientation
// (padding and offsets too, when `keep_layout`).
Case with_dims(const Case& c, int64_t m, int64_t n, int64_t k, bool keep_layout) {
  Case x = c;
  x.m = m, x.n = n, x.k = k;
  // Padding is kept as padding (beyond the new rows or columns), not as a stride.
  auto relayout = [&](const Layout& old, int64_t old_rows, int64_t old_cols, int64_t rows, int64_t cols) {
    bool col = is_col_major(old);
    int64_t pad = col ? old.col_stride - std::max<int64_t>(old_rows, 1) : old.row_stride - std::max<int64_t>(old_cols, 1);
    return gemm::make_layout(rows, cols, col, keep_layout ? std::max<int64_t>(pad, 0) : 0, keep_layout ? old.offset : 0);
  };
  x.a = relayout(c.a, c.m, c.k, m, k), x.b = relayout(c.b, c.k, c.n, k, n), x.c = relayout(c.c, c.m, c.n, m, n);
  return x;
}

// Smaller values worth trying for a dimension, most desirable first.
std::vector<int64_t> smaller(int64_t d) {
  std::vector<int64_t> v = {0, 1, 2, 3};
  for (int64_t t : {8, 16, 32, 64, 128, 256}) v.insert(v.end(), {t - 1, t, t + 1});
  for (int64_t step = d / 2; step >= 1; step /= 2) v.push_back(d - step);  // binary search from below
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  v.erase(std::remove_if(v.begin(), v.end(), [d](int64_t x) { return x >= d; }), v.end());
  return v;
}

}  // namespace

ShrinkResult shrink(const Spec& spec, const Case& failing, const CaseOutcome& original, const CaseProbe& probe,
                    int max_attempts) {
  Shrinker s(spec, probe, original.verdict, max_attempts);
  Case best = failing;
  CaseOutcome best_outcome = original;
  auto take = [&](const Case& c) {
    if (!s.still_fails(c)) return false;
    best = c, best_outcome = s.last();
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    // Layouts: compact, row-major, no offsets; all at once, then one tensor at a time.
    Case plain = best;
    plain.a = gemm::make_layout(plain.m, plain.k, false), plain.b = gemm::make_layout(plain.k, plain.n, false);
    plain.c = gemm::make_layout(plain.m, plain.n, false);
    if (take(plain)) progress = true;
    for (int which = 0; which < 3 && !progress; ++which) {
      Case x = best;
      Layout* l[3] = {&x.a, &x.b, &x.c};
      int64_t rows[3] = {x.m, x.k, x.m}, cols[3] = {x.k, x.n, x.n};
      *l[which] = gemm::make_layout(rows[which], cols[which], false);
      progress |= take(x);
    }
    // Scalars: alpha = 1, beta = 0.
    for (auto [alpha, beta] : {std::pair{1.0, 0.0}, {1.0, best.beta}, {best.alpha, 0.0}}) {
      Case x = best;
      x.alpha = alpha, x.beta = beta;
      if (take(x)) progress = true;
    }
    // Values: small exact integers are the easiest to read.
    if (best.recipe != Recipe::ints) {
      Case x = best;
      x.recipe = Recipe::ints;
      progress |= take(x);
    }
    // Dimensions, one at a time, smallest candidate first.
    for (int dim = 0; dim < 3; ++dim) {
      int64_t d = dim == 0 ? best.m : dim == 1 ? best.n : best.k;
      for (int64_t v : smaller(d)) {
        Case x = with_dims(best, dim == 0 ? v : best.m, dim == 1 ? v : best.n, dim == 2 ? v : best.k, true);
        if (take(x)) {
          progress = true;
          break;
        }
      }
    }
  }
  ShrinkResult r;
  r.shrunk = best, r.outcome = best_outcome, r.attempts = s.attempts();
  // Re-run three times: a failure that does not always come back is flaky.
  for (int i = 0; i < 3; ++i) r.reproduced += probe(best).verdict == original.verdict;
  r.flaky = r.reproduced < 3;
  // Which properties matter: the neighbours of each dimension that pass.
  for (int dim = 0; dim < 3; ++dim) {
    const char* name = dim == 0 ? "m" : dim == 1 ? "n" : "k";
    int64_t d = dim == 0 ? best.m : dim == 1 ? best.n : best.k;
    std::vector<std::string> passes;
    for (int64_t v : {d - 1, d + 1, (d / 64 + 1) * 64}) {
      if (v < 1 || v == d) continue;  // an empty problem passes trivially: not telling
      Case x = with_dims(best, dim == 0 ? v : best.m, dim == 1 ? v : best.n, dim == 2 ? v : best.k, true);
      if (!s.inside_spec(x)) continue;
      CaseOutcome o = probe(x);
      ++r.attempts;
      if (o.verdict == Verdict::pass) passes.push_back(fmt::format("{} = {}", name, v));
    }
    if (!passes.empty())
      r.notes.push_back(fmt::format("fails at {} = {}; passes for {}", name, d, fmt::join(passes, ", ")));
  }
  return r;
}

std::string explain(const ShrinkResult& r) {
  std::string s = fmt::format("{} (call {}) after shrinking ({} cases run{}): {}\n", name(r.outcome.verdict),
                              r.outcome.call, r.attempts, r.flaky ? fmt::format(", FLAKY: reproduced {} of 3", r.reproduced) : "",
                              describe(r.shrunk));
  if (!r.outcome.stats.first_bad.empty()) {
    const BadElement& e = r.outcome.stats.first_bad.front();
    s += fmt::format("  first bad element C[{},{}]: expected {:.9g}, got {:.9g} ({:.3g} ulp)\n", e.row, e.col,
                     e.expected, e.got, e.ulps);
  } else {
    s += "  " + r.outcome.detail + "\n";
  }
  for (auto& n : r.notes) s += "  " + n + "\n";
  return s;
}

}  // namespace assay
