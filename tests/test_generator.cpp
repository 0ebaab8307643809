// GEMM case generation: the sweep is deterministic, covers boundary sizes,
// layouts, scalars, recipes and 32-bit index limits, and stays inside the
// spec's requires; random cases are reproducible and respect their limits.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "spec/requires.h"
#include "spec/spec.h"

using namespace assay;

namespace {

Spec plain_spec(DType t = DType::f32) {
  Spec s;
  s.name = "test";
  for (const char* name : {"a", "b", "c"}) s.set_dtype(name, t);
  s.compute = Compute::f32;
  return s;
}

Spec constrained_spec() {
  Spec s = plain_spec();
  for (const char* r : {"k % 8 == 0", "row_major(B)", "aligned(A, 16)"}) s.requires_.push_back(Requirement::parse(r));
  return s;
}

gemm::Problem without_seed(gemm::Problem c) {
  c.seed = 0;
  return c;
}

bool transposed(const TensorGeom& g) {
  return g.rows() > 1 && g.cols() > 1 && g.row_stride() == 1 && g.col_stride() >= g.rows();
}
bool padded(const TensorGeom& g) {
  if (g.rows() <= 1 || g.cols() <= 1) return false;
  if (g.col_stride() == 1) return g.row_stride() > g.cols();
  if (g.row_stride() == 1) return g.col_stride() > g.rows();
  return false;
}

// The three requirements, checked by hand (not through Requirement).
bool satisfies_by_hand(const gemm::Problem& c) {
  auto g = gemm::tensors(c);
  const TensorGeom& a = g[gemm::A];
  const TensorGeom& b = g[gemm::B];
  bool k_ok = c.k % 8 == 0;
  bool b_row = b.col_stride() == 1 && b.row_stride() >= b.cols();
  bool a_aligned = (a.offset * 4) % 16 == 0 && (a.row_stride() <= 1 || (a.row_stride() * 4) % 16 == 0) &&
                   (a.col_stride() <= 1 || (a.col_stride() * 4) % 16 == 0);
  return k_ok && b_row && a_aligned;
}

}  // namespace

TEST_CASE("sweep is deterministic for a seed; another seed changes only seeds", "[generator]") {
  Spec s = plain_spec();
  auto a = gemm::sweep(s, 1), b = gemm::sweep(s, 1), c = gemm::sweep(s, 2);
  REQUIRE(a.size() > 100);
  CHECK(a == b);
  REQUIRE(c.size() == a.size());
  int64_t same_seed = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(i << ": " << describe(gemm::to_case(a[i])));
    CHECK(without_seed(a[i]) == without_seed(c[i]));
    same_seed += a[i].seed == c[i].seed;
  }
  CHECK(same_seed == 0);
  // every case of one sweep draws different values
  std::set<uint64_t> seeds;
  for (auto& x : a) seeds.insert(x.seed);
  CHECK(seeds.size() == a.size());
  // and no case appears twice (seed aside)
  std::set<std::string> shapes;
  for (auto& x : a) shapes.insert(describe(gemm::to_case(without_seed(x))));
  CHECK(shapes.size() == a.size());
}

TEST_CASE("sweep covers the boundary sizes in every dimension", "[generator]") {
  auto cases = gemm::sweep(plain_spec(), 1);
  std::set<int64_t> ms, ns, ks;
  for (auto& c : cases) ms.insert(c.m), ns.insert(c.n), ks.insert(c.k);
  std::vector<int64_t> want = {0, 1, 2, 3};
  for (int64_t t = 8; t <= 256; t *= 2) want.insert(want.end(), {t - 1, t, t + 1});
  for (int64_t v : want) {
    INFO("size " << v);
    CHECK(ms.count(v) == 1);
    CHECK(ns.count(v) == 1);
    CHECK(ks.count(v) == 1);
  }
}

TEST_CASE("sweep covers transposed, padded and offset layouts of A, B and C", "[generator]") {
  auto cases = gemm::sweep(plain_spec(), 1);
  for (int w : {gemm::A, gemm::B, gemm::C}) {
    INFO("operand " << "ABC"[w]);
    bool t = false, p = false, o = false, tp = false;
    for (auto& c : cases) {
      TensorGeom g = gemm::tensors(c)[w];
      t |= transposed(g);
      p |= padded(g);
      o |= g.offset > 0;
      tp |= transposed(g) && padded(g);
    }
    CHECK(t);
    CHECK(p);
    CHECK(o);
    CHECK(tp);
  }
}

TEST_CASE("sweep covers all 25 alpha/beta pairs and the four recipes", "[generator]") {
  auto cases = gemm::sweep(plain_spec(), 1);
  const double vals[] = {-1, 0, 0.7, 1, 1.3};
  std::set<std::pair<double, double>> pairs;
  std::set<Recipe> recipes;
  for (auto& c : cases) pairs.insert({c.alpha, c.beta}), recipes.insert(c.recipe);
  for (double al : vals)
    for (double be : vals) {
      INFO("alpha " << al << " beta " << be);
      CHECK(pairs.count({al, be}) == 1);
    }
  CHECK(recipes.size() == 4);
  // alpha = 0 on specials would never read the planted specials
  for (auto& c : cases)
    if (c.recipe == Recipe::specials) CHECK(c.alpha != 0);
}

const SweepTarget kGpu{BackendKind::cuda, 100e9}, kHost{BackendKind::host, 2e9};

bool past_2_31(const TensorGeom& g) { return g.count() > (int64_t(1) << 31); }

TEST_CASE("sweep has cases past the 32-bit index limits", "[generator]") {
  auto cases = gemm::sweep(plain_spec(), 1, kGpu);
  bool big_a = false, big_b = false, long_m = false, long_n = false;
  const int64_t tiles = int64_t(65535) * 32;
  for (auto& c : cases) {
    auto g = gemm::tensors(c);
    big_a |= g[gemm::A].count() > (int64_t(1) << 31) && g[gemm::A].span() > (int64_t(1) << 31);
    big_b |= g[gemm::B].count() > (int64_t(1) << 31);
    long_m |= c.m > tiles;
    long_n |= c.n > tiles;
  }
  CHECK(big_a);
  CHECK(big_b);
  CHECK(long_m);
  CHECK(long_n);
}

TEST_CASE("cases past 2^31 elements: cuda only, tiny other dims, within the memory budget", "[generator]") {
  for (DType t : {DType::f32, DType::f16}) {
    Spec s = plain_spec(t);
    s.backend = BackendKind::cuda;
    int big_a = 0, big_b = 0;
    for (auto& c : gemm::sweep(s, 1, kGpu)) {
      auto g = gemm::tensors(c);
      if (!past_2_31(g[gemm::A]) && !past_2_31(g[gemm::B])) continue;
      INFO(describe(gemm::to_case(c)));
      CHECK(gemm::case_bytes(c) <= kGpu.max_bytes);
      CHECK(std::min({c.m, c.n, c.k}) <= 3);             // one dimension tiny
      CHECK(std::max(c.m, c.n) % 32 != 0);                // no tile divides the big dimension
      CHECK_FALSE(past_2_31(g[gemm::C]));
      big_a += past_2_31(g[gemm::A]), big_b += past_2_31(g[gemm::B]);
    }
    CHECK(big_a == 1);
    CHECK(big_b == 1);
    // The host sweep has none (its limits would skip them anyway), nor has a
    // cuda sweep whose memory budget cannot hold them.
    for (auto target : {kHost, SweepTarget{BackendKind::cuda, 4e9}})
      for (auto& c : gemm::sweep(s, 1, target)) {
        auto g = gemm::tensors(c);
        INFO(describe(gemm::to_case(c)));
        CHECK_FALSE(past_2_31(g[gemm::A]));
        CHECK_FALSE(past_2_31(g[gemm::B]));
      }
  }
}

TEST_CASE("the index cases respect the spec's requires", "[generator]") {
  Spec s = constrained_spec();
  s.backend = BackendKind::cuda;
  int big = 0;
  for (auto& c : gemm::sweep(s, 1, kGpu)) {
    auto g = gemm::tensors(c);
    if (!past_2_31(g[gemm::A]) && !past_2_31(g[gemm::B])) continue;
    INFO(describe(gemm::to_case(c)));
    CHECK(satisfies_by_hand(c));
    ++big;
  }
  CHECK(big == 2);
}

TEST_CASE("sweep stays inside the spec's requires and is still a real sweep", "[generator]") {
  Spec s = constrained_spec();
  auto cases = gemm::sweep(s, 3, kGpu);
  CHECK(cases.size() > 50);
  std::set<int64_t> ms, ns;
  std::set<Recipe> recipes;
  std::set<std::pair<double, double>> pairs;
  bool a_transposed = false, c_offset = false, big = false;
  for (auto& c : cases) {
    INFO(describe(gemm::to_case(c)));
    gemm::Context ctx(c);
    for (auto& r : s.requires_) CHECK(r.holds(ctx));
    CHECK(satisfies_by_hand(c));
    ms.insert(c.m), ns.insert(c.n), recipes.insert(c.recipe), pairs.insert({c.alpha, c.beta});
    auto g = gemm::tensors(c);
    a_transposed |= transposed(g[gemm::A]);
    c_offset |= g[gemm::C].offset > 0;
    big |= g[gemm::A].count() > (int64_t(1) << 31);
  }
  CHECK(ms.size() >= 10);
  CHECK(ns.size() >= 10);
  CHECK(recipes.size() == 4);
  CHECK(pairs.size() == 25);
  CHECK(a_transposed);  // col-major A with an aligned leading dimension is allowed
  CHECK(c_offset);      // C is unconstrained
  CHECK(big);
  // The same sweep without requires has cases that break each of them.
  int64_t outside = 0;
  for (auto& c : gemm::sweep(plain_spec(), 3)) outside += !satisfies_by_hand(c);
  CHECK(outside > 20);
}

TEST_CASE("fit_requires keeps a fitting case and moves one that does not fit", "[generator]") {
  Spec s = constrained_spec();
  gemm::Problem c;
  c.m = 16, c.n = 16, c.k = 16;
  c.a = gemm::make_layout(16, 16, false), c.b = gemm::make_layout(16, 16, false), c.c = gemm::make_layout(16, 16, false);
  auto same = gemm::fit_requires(c, s);
  REQUIRE(same);
  CHECK(*same == c);
  gemm::Problem odd = c;
  odd.k = 13;
  odd.a = gemm::make_layout(16, 13, false), odd.b = gemm::make_layout(13, 16, true);
  auto fitted = gemm::fit_requires(odd, s);
  REQUIRE(fitted);
  CHECK(satisfies_by_hand(*fitted));
  CHECK(fitted->k >= 13);
  // impossible requires: nothing fits
  Spec never = plain_spec();
  never.requires_.push_back(Requirement::parse("m < 0"));
  CHECK_FALSE(gemm::fit_requires(c, never));
  CHECK(gemm::sweep(never, 1).empty());
}

TEST_CASE("random_case is deterministic per (seed, index) and respects GenLimits", "[generator]") {
  Spec s = plain_spec();
  const GenLimits lim{160, double(1 << 20)};
  std::set<std::string> distinct;
  std::set<int64_t> ms;
  int64_t col_major = 0, with_offset = 0;
  for (uint64_t i = 0; i < 400; ++i) {
    auto a = gemm::random_case(s, 9, i, lim), b = gemm::random_case(s, 9, i, lim);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(*a == *b);
    auto other = gemm::random_case(s, 10, i, lim);
    REQUIRE(other);
    INFO(describe(gemm::to_case(*a)));
    CHECK(a->m <= lim.max_random_dim);
    CHECK(a->n <= lim.max_random_dim);
    CHECK(a->k <= lim.max_random_dim);
    CHECK(double(a->m) * double(a->n) * double(a->k) <= lim.max_random_work);
    CHECK(a->a_type == s.dtype("a"));
    distinct.insert(describe(gemm::to_case(*a)));
    ms.insert(a->m);
    auto g = gemm::tensors(*a);
    col_major += transposed(g[gemm::A]);
    with_offset += g[gemm::C].offset > 0;
  }
  CHECK(distinct.size() > 390);
  CHECK(ms.size() > 50);
  CHECK(col_major > 50);
  CHECK(with_offset > 20);
  // a different seed gives a different stream
  int64_t same = 0;
  for (uint64_t i = 0; i < 100; ++i) same += *gemm::random_case(s, 1, i, lim) == *gemm::random_case(s, 2, i, lim);
  CHECK(same < 5);
}

TEST_CASE("random_case keeps small work limits and the spec's requires", "[generator]") {
  Spec s = constrained_spec();
  const GenLimits lim{256, 50000};
  int64_t found = 0;
  for (uint64_t i = 0; i < 300; ++i) {
    auto c = gemm::random_case(s, 4, i, lim);
    if (!c) continue;
    ++found;
    INFO(describe(gemm::to_case(*c)));
    CHECK(satisfies_by_hand(*c));
  }
  CHECK(found > 250);
  Spec plain = plain_spec();
  for (uint64_t i = 0; i < 300; ++i) {
    auto c = gemm::random_case(plain, 4, i, lim);
    REQUIRE(c);
    CHECK(double(c->m) * double(c->n) * double(c->k) <= lim.max_random_work);
  }
}

TEST_CASE("random_case respects a max_random_dim below 64", "[generator]") {
  // GenLimits: "random cases stay below this per dimension".
  Spec s = plain_spec();
  const GenLimits lim{32, 1e9};
  int64_t over = 0;
  std::string first;
  for (uint64_t i = 0; i < 300; ++i) {
    auto c = gemm::random_case(s, 6, i, lim);
    REQUIRE(c);
    if (c->m > lim.max_random_dim || c->n > lim.max_random_dim || c->k > lim.max_random_dim) {
      if (over++ == 0) first = describe(gemm::to_case(*c));
    }
  }
  INFO("first case over the limit: " << first);
  CHECK(over == 0);
}
