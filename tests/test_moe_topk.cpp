// The moe_topk family: the FP64 routing against hand-computed values, the
// tie-aware matcher on crafted choices (ties either way, a clear loser, the
// group limit, the order), the weights' bound on f32 results and planted
// errors, spec keys, the sweep and codec, and every host zoo kernel through
// the gate.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include "case/rng.h"
#include "core/error.h"
#include "ops/moe_topk/moe_topk_routing.h"
#include "ops/op.h"
#include "zoo_checks.h"
#include "spec/spec.h"

using namespace assay;
using namespace assay::moe_topk;

namespace {

Settings softmax_routing(bool renormalize = true) {
  Settings s;
  s.mode = Mode::softmax_topk, s.renormalize = renormalize;
  return s;
}
// DeepSeek-V3's routing on `groups` groups, keeping `keep`.
Settings grouped(int groups, int keep, double scaling = 2.5) {
  Settings s;
  s.mode = Mode::sigmoid_bias_grouped, s.bias = true, s.n_group = groups, s.topk_group = keep, s.scaling = scaling;
  return s;
}

std::optional<std::string> choice(const Settings& s, const TokenRouting& r, std::vector<int64_t> got) {
  return judge_choice(s, r, got);
}

std::filesystem::path spec_dir() {
  const auto dir = std::filesystem::temp_directory_path() / "assay-moe-spec";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "k.cpp") << "\n";
  return dir;
}
Spec spec_of(const std::string& body, const char* compute = "f32") {
  return parse_spec("name: k\nop: moe_topk\nbackend: host\nsource: k.cpp\ncompute: " + std::string(compute) + "\n" + body,
                    spec_dir() / "k.yaml");
}
const char* kGroupedSpec =
    "routing: {mode: sigmoid_bias_grouped, n_group: 8, topk_group: 4, routed_scaling_factor: 2.5}\n"
    "dtypes: {logits: f32, bias: f32, weights: f32, indices: i32}\n";

}  // namespace

TEST_CASE("moe_topk routing matches hand-computed values", "[moe_topk]") {
  SECTION("softmax_topk: the two largest, renormalized over the chosen") {
    const std::vector<double> x{1, 3, 2, 0};
    const TokenRouting r = route(softmax_routing(), 2, x, {}, {});
    REQUIRE_FALSE(r.undefined);
    CHECK(r.chosen == std::vector<int64_t>{1, 2});
    double w[2], b[2];
    weights_of(softmax_routing(), r, r.chosen, w, b);
    CHECK(w[0] == Approx(std::exp(3.0) / (std::exp(3.0) + std::exp(2.0))).epsilon(1e-15));
    CHECK(w[1] == Approx(std::exp(2.0) / (std::exp(3.0) + std::exp(2.0))).epsilon(1e-15));
    weights_of(softmax_routing(false), r, r.chosen, w, b);  // the probabilities themselves
    const double sum = std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + 1.0;
    CHECK(w[0] == Approx(std::exp(3.0) / sum).epsilon(1e-15));
  }
  SECTION("sigmoid_bias_grouped: groups by their two best, the bias chooses but never weighs") {
    // 4 groups of 2. Group sums of sel: g0 = s(0) + s(0) = 1; g1 holds the
    // single best expert but a weak partner (0.99); g2 two good ones (1.76);
    // g3 low. Kept: g2 and g0, so the best single expert is not chosen.
    const std::vector<double> x{0, 0, 4, -5, 2, 2, -3, -3};
    const std::vector<double> bias{0, 0, 0, 0, 0, 0, 0, 0.5};
    const Settings s = grouped(4, 2, 2.0);
    const TokenRouting r = route(s, 2, x, bias, {});
    auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
    CHECK(r.group[2] == Approx(2 * sig(2)));
    CHECK(r.group[1] == Approx(sig(4) + sig(-5)));
    CHECK(r.chosen == std::vector<int64_t>{4, 5});
    double w[2], b[2];
    weights_of(s, r, r.chosen, w, b);
    CHECK(w[0] == Approx(2.0 * sig(2) / (2 * sig(2) + double(1e-20f))).epsilon(1e-15));
    // Expert 7's bias lifts its sel, not its weight.
    const TokenRouting r7 = route(s, 1, std::vector<double>{-9, -9, -9, -9, -9, -9, -9, -9}, bias, {});
    CHECK(r7.chosen == std::vector<int64_t>{7});
    weights_of(s, r7, r7.chosen, w, b);
    CHECK(w[0] == Approx(2.0 * sig(-9) / (sig(-9) + double(1e-20f))).epsilon(1e-12));
  }
  SECTION("undefined tokens: NaN; softmax's +inf and all -inf") {
    CHECK(route(softmax_routing(), 1, std::vector<double>{0, NAN}, {}, {}).undefined);
    CHECK(route(softmax_routing(), 1, std::vector<double>{0, INFINITY}, {}, {}).undefined);
    CHECK(route(softmax_routing(), 1, std::vector<double>{-INFINITY, -INFINITY}, {}, {}).undefined);
    const TokenRouting masked = route(softmax_routing(), 1, std::vector<double>{-INFINITY, 1}, {}, {});
    REQUIRE_FALSE(masked.undefined);
    CHECK(masked.chosen == std::vector<int64_t>{1});
    CHECK(masked.score[0] == 0.0);
    CHECK_FALSE(route(grouped(1, 1), 1, std::vector<double>{-INFINITY, INFINITY}, std::vector<double>{0, 0}, {}).undefined);
  }
}

TEST_CASE("moe_topk tie-aware matcher: ties either way, nothing beyond the bounds", "[moe_topk]") {
  const Settings s = softmax_routing();
  SECTION("exact ties: any of the tied experts, in either order") {
    const TokenRouting r = route(s, 2, std::vector<double>{1, 1, 1, 0}, {}, {});
    CHECK_FALSE(choice(s, r, {0, 1}));
    CHECK_FALSE(choice(s, r, {2, 0}));
    CHECK_FALSE(choice(s, r, {1, 2}));
    CHECK(choice(s, r, {0, 3}));  // 3 is below the tie
  }
  SECTION("a near tie within rounding goes either way; a clear gap does not") {
    const double a = 0.5, near = std::nextafter(0.5f, 1.0f), far = 0.5 + 1e-3;
    const TokenRouting r = route(s, 1, std::vector<double>{a, near}, {}, {});
    CHECK_FALSE(choice(s, r, {0}));
    CHECK_FALSE(choice(s, r, {1}));
    const TokenRouting q = route(s, 1, std::vector<double>{a, far}, {}, {});
    CHECK(choice(s, q, {0}));
    CHECK_FALSE(choice(s, q, {1}));
  }
  SECTION("indices out of range or twice") {
    const TokenRouting r = route(s, 2, std::vector<double>{3, 2, 1}, {}, {});
    CHECK(choice(s, r, {0, 3}));
    CHECK(choice(s, r, {0, -1}));
    CHECK(choice(s, r, {0, 0}));
  }
  SECTION("sorted: descending, except within a tie") {
    const TokenRouting r = route(s, 3, std::vector<double>{3, 2, 2, 1}, {}, {});
    CHECK_FALSE(choice(s, r, {0, 1, 2}));
    CHECK_FALSE(choice(s, r, {0, 2, 1}));
    CHECK(choice(s, r, {1, 0, 2}));
    Settings any = s;
    any.sorted = false;
    CHECK_FALSE(choice(any, r, {1, 0, 2}));
  }
  SECTION("the group limit: an expert of a group not kept is wrong, a tied group may go either way") {
    const Settings g = grouped(4, 1);
    const std::vector<double> bias(8, 0.0);
    // Group 1 holds the two best experts together; expert 0 alone is the best single one.
    const TokenRouting r = route(g, 2, std::vector<double>{5, -5, 3, 3, 0, 0, -1, -1}, bias, {});
    CHECK(r.chosen == std::vector<int64_t>{2, 3});
    CHECK_FALSE(choice(g, r, {2, 3}));
    CHECK(choice(g, r, {0, 2}));  // the top two over all experts: group limit ignored
    // Two groups tie exactly: either is kept, but not a mix.
    const TokenRouting t = route(g, 2, std::vector<double>{1, 1, 1, 1, -2, -2, -2, -2}, bias, {});
    CHECK_FALSE(choice(g, t, {0, 1}));
    CHECK_FALSE(choice(g, t, {3, 2}));
    CHECK(choice(g, t, {0, 2}));
  }
  SECTION("every expert equal: any choice") {
    const Settings g = grouped(8, 4);
    const TokenRouting r = route(g, 8, std::vector<double>(64, 0.0), std::vector<double>(64, 0.0), {});
    CHECK_FALSE(choice(g, r, {63, 0, 9, 8, 17, 16, 62, 61}));  // four groups
    CHECK(choice(g, r, {0, 8, 16, 24, 32, 1, 2, 3}));  // five groups
  }
}

TEST_CASE("moe_topk weights: f32 results pass, planted errors fail", "[moe_topk]") {
  uint64_t h = 7;
  auto uniform = [&] { return 2 * unit_double(h = mix64(h)) - 1; };
  const Settings g = grouped(8, 4);
  double worst = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> x(256), bias(256);
    for (double& v : x) v = double(float(4 * uniform()));
    for (double& v : bias) v = double(float(0.1 * uniform()));
    const TokenRouting r = route(g, 8, x, bias, {});
    double ref[8], bound[8];
    weights_of(g, r, r.chosen, ref, bound);
    // What an f32 kernel computes: sigmoid, the sum, the quotient, the scaling.
    float s[8], sum = 0;
    for (int j = 0; j < 8; ++j) sum += s[j] = 1.0f / (1.0f + std::exp(-float(x[size_t(r.chosen[size_t(j)])])));
    for (int j = 0; j < 8; ++j) {
      const float w = s[j] / (sum + 1e-20f) * 2.5f;
      const double allowed = 2.0 * 0x1p-24 * bound[j] + 0x1p-24 * std::fabs(ref[j]);
      worst = std::max(worst, std::fabs(double(w) - ref[j]) / allowed);
      // The bias in the weight is far outside.
      const float bad = (s[j] + float(bias[size_t(r.chosen[size_t(j)])])) / (sum + 1e-20f) * 2.5f;
      if (std::fabs(bias[size_t(r.chosen[size_t(j)])]) > 1e-3) CHECK(std::fabs(double(bad) - ref[j]) > allowed);
    }
  }
  CHECK(worst < 0.5);
  // No renormalization is far outside too.
  const TokenRouting r = route(softmax_routing(), 2, std::vector<double>{1, 3, 2, 0}, {}, {});
  double ref[2], bound[2], raw[2], unused[2];
  weights_of(softmax_routing(), r, r.chosen, ref, bound);
  weights_of(softmax_routing(false), r, r.chosen, raw, unused);
  CHECK(std::fabs(raw[0] - ref[0]) > 2.0 * 0x1p-24 * bound[0] * 1e3);
}

TEST_CASE("moe_topk spec keys and case checks", "[moe_topk]") {
  CHECK_NOTHROW(spec_of(kGroupedSpec));
  CHECK_NOTHROW(spec_of("routing: {mode: softmax_topk}\ndtypes: {logits: bf16, weights: f32, indices: i32}\n"));
  CHECK_THROWS_WITH(spec_of("routing: {mode: topk}\ndtypes: {logits: f32, weights: f32, indices: i32}\n"),
                    Catch::Contains("mode"));
  CHECK_THROWS_WITH(spec_of("routing: {mode: softmax_topk, n_group: 4}\ndtypes: {logits: f32, weights: f32, indices: i32}\n"),
                    Catch::Contains("sigmoid_bias_grouped"));
  CHECK_THROWS_WITH(spec_of("routing: {mode: softmax_topk}\ndtypes: {logits: f32, bias: f32, weights: f32, indices: i32}\n"),
                    Catch::Contains("no bias"));
  CHECK_THROWS_WITH(spec_of("routing: {mode: sigmoid_bias_grouped}\ndtypes: {logits: f32, weights: f32, indices: i32}\n"),
                    Catch::Contains("dtypes.bias"));
  CHECK_THROWS_WITH(spec_of("routing: {mode: softmax_topk}\ndtypes: {logits: f32, weights: f16, indices: i32}\n"),
                    Catch::Contains("weights must be f32"));
  CHECK_THROWS_WITH(spec_of(kGroupedSpec, "f16"), Catch::Contains("compute"));
  CHECK_THROWS_WITH(spec_of("dtypes: {logits: f32, weights: f32, indices: i32}\n"), Catch::Contains("routing"));

  const Spec spec = spec_of(kGroupedSpec);
  const Op& op = op_of(spec);
  const std::vector<Case> sweep = op.sweep(spec, 1, SweepTarget{BackendKind::cuda, 1e12});
  Case c = sweep.front();
  op.validate(c);
  Case odd = c;
  odd.sizes[1].value = 12;  // not a multiple of n_group
  CHECK_THROWS_AS(op.validate(odd), InputError);
  Case wrong_scalar = c;
  wrong_scalar.scalars[0].value += 1;
  CHECK_THROWS_WITH(op.validate(wrong_scalar), Catch::Contains("topk"));
}

TEST_CASE("moe_topk sweep: real expert counts, topk, token tails past the grid, layouts, ties", "[moe_topk]") {
  for (const char* body : {kGroupedSpec, "routing: {mode: softmax_topk}\ndtypes: {logits: f32, weights: f32, indices: i32}\n"}) {
    const Spec spec = spec_of(body);
    const Op& op = op_of(spec);
    const std::vector<Case> cuda = op.sweep(spec, 1, SweepTarget{BackendKind::cuda, 1e12});
    const std::vector<Case> host = op.sweep(spec, 1, SweepTarget{BackendKind::host, 1e12});
    CHECK(host.size() < cuda.size());
    std::set<int64_t> experts, topk;
    bool past_grid = false, transposed = false, ties = false, specials = false;
    for (const Case& c : cuda) {
      op.validate(c);
      experts.insert(c.sizes[1].value), topk.insert(c.sizes[2].value);
      past_grid |= c.sizes[0].value > 65535;
      transposed |= c.tensors[0].strides[1] != 1;
      ties |= c.recipe == Recipe::ints, specials |= c.recipe == Recipe::specials;
    }
    for (int64_t e : {8, 64, 160, 256}) CHECK(experts.count(e));
    for (int64_t k : {1, 2, 6, 8}) CHECK(topk.count(k));
    CHECK(past_grid);
    CHECK(transposed);
    CHECK(ties);
    CHECK(specials);
  }
}

TEST_CASE("moe_topk fuzz codec and shrink hooks keep cases valid", "[moe_topk]") {
  const Spec spec = spec_of(kGroupedSpec);
  testing::check_codec(op_of(spec), spec, 3, 500, 20);
  CHECK_FALSE(op_of(spec).seed_cases(spec).empty());
}

TEST_CASE("host moe_topk zoo kernels get their expected verdicts", "[moe_topk][samples]") {
  CHECK(testing::check_host_zoo("moe_topk", testing::sample_gate_options(100), 10).planted >= 6);
}
