// Value recipes: how input elements are drawn. Every value is a pure function
// of (recipe, seed, tensor, row, col) computed with exact operations only
// (integer hashing, exact scaling by powers of two, one final rounding), so the
// GPU fill and the host fill produce identical bits.
#pragma once
#include <cstdint>
#include <string_view>
#include <optional>

#include "case/rng.h"
#include "core/dtype.h"

namespace assay {

enum class Recipe : uint8_t {
  ints,      // small integers, sparse enough that the exact sum is representable
  uniform,   // uniform reals in [-1, 1)
  mixed,     // uniform mantissas times 2^e, e spread over a range: cancellation
  specials,  // uniform reals with a few +-0, +-Inf, NaN and subnormals planted
  offset,    // center + uniform reals of a small spread: a large mean over a tiny variance (cancellation)
};

std::string_view name(Recipe r);
std::optional<Recipe> parse_recipe(std::string_view s);

// Which elements of one tensor keep their recipe value; the others are zero.
// The shrinker cuts nonzeros with it (docs/shrinking.md): first the hash rule
// (positions whose hash lies in [lo, hi), an interval bisected while the
// failure stays), then an explicit list that delta debugging (ddmin) reduces. Fixed size and pointer free, so it travels
// to device fills by value; a linear scan of <= 32 entries is cheap there.
struct Keep {
  static constexpr int kMaxListed = 32;
  double lo = 0.0, hi = 1.0;  // hash rule: kept when lo <= unit(hash(tensor, position)) < hi
  int32_t listed = -1;           // >= 0: exactly at[0..listed) are kept (the hash rule is off)
  uint64_t at[kMaxListed] = {};  // (row << 32) | col; unused entries stay 0
  bool all() const { return listed < 0 && lo <= 0.0 && hi >= 1.0; }
};
// Written out: this header is also compiled as C++17 by nvcc (no "= default").
inline bool operator==(const Keep& a, const Keep& b) {
  if (a.lo != b.lo || a.hi != b.hi || a.listed != b.listed) return false;
  for (int i = 0; i < Keep::kMaxListed; ++i)
    if (a.at[i] != b.at[i]) return false;
  return true;
}
inline bool operator!=(const Keep& a, const Keep& b) { return !(a == b); }

ASSAY_HD uint64_t keep_position(uint64_t row, uint64_t col) { return (row << 32) | col; }

// Whether element (row, col) of `tensor` keeps its value. Depends on the
// position only (not the fill seed), so all calls of a case keep the same set.
ASSAY_HD bool keeps(const Keep& k, uint32_t tensor, uint64_t row, uint64_t col) {
  if (k.listed >= 0) {
    const uint64_t pos = keep_position(row, col);
    for (int32_t i = 0; i < k.listed; ++i)
      if (k.at[i] == pos) return true;
    return false;
  }
  if (k.lo <= 0.0 && k.hi >= 1.0) return true;
  const double u = unit_double(hash3(0x6b656570ull, tensor, keep_position(row, col)));
  return u >= k.lo && u < k.hi;
}

// A few elements of one tensor that take other values than the recipe's:
// the sparse-change call (docs/cases.md) redraws a tensor as the call before
// had it except here, so that a result cached on any partial fingerprint of
// the inputs is caught. Positions are drawn per case by the op.
struct Patch {
  static constexpr int kMaxListed = 8;
  int64_t row = -1;               // >= 0: every element of this row
  int32_t listed = 0;             // otherwise exactly these positions (keep_position)
  uint64_t at[kMaxListed] = {};
  uint64_t seed = 0;              // where the changed values are drawn from
  ASSAY_HD bool any() const { return row >= 0 || listed > 0; }
  ASSAY_HD bool covers(uint64_t r, uint64_t c) const {
    if (row >= 0) return r == uint64_t(row);
    for (int32_t i = 0; i < listed; ++i)
      if (at[i] == keep_position(r, c)) return true;
    return false;
  }
  // The covered positions one by one, j in [0, covered(cols)): the row's
  // columns, or the listed positions (some may lie outside the tensor).
  ASSAY_HD int64_t covered(int64_t cols) const { return row >= 0 ? cols : listed; }
  ASSAY_HD void position(int64_t j, uint64_t& r, uint64_t& c) const {
    if (row >= 0) r = uint64_t(row), c = uint64_t(j);
    else r = at[j] >> 32, c = at[j] & 0xffffffffu;
  }
};

// A relabelled draw (Op::relabeling, docs/cases.md): element (r, c) of the
// rows x cols matrix view takes what the plain draw gives element
// ((r + by_rows) mod rows, (c + by_cols) mod cols), its keep included, so
// the tensor holds the same values moved round. by_rows in [0, rows) and
// by_cols in [0, cols): the source is found without a division.
struct Rotation {
  int64_t by_rows = 0, by_cols = 0;
  int64_t rows = 0, cols = 0;
  ASSAY_HD bool any() const { return by_rows > 0 || by_cols > 0; }
  ASSAY_HD uint64_t source_row(uint64_t r) const {
    const uint64_t s = r + uint64_t(by_rows);
    return s >= uint64_t(rows) && by_rows > 0 ? s - uint64_t(rows) : s;
  }
  ASSAY_HD uint64_t source_col(uint64_t c) const {
    const uint64_t s = c + uint64_t(by_cols);
    return s >= uint64_t(cols) && by_cols > 0 ? s - uint64_t(cols) : s;
  }
};

// Parameters of one recipe for one tensor: chosen by the op's generator from
// the case (dims, dtypes) so that results stay representable.
struct RecipeParams {
  Recipe recipe = Recipe::uniform;
  int32_t int_range = 3;        // ints: |v| <= int_range
  double density = 1.0;         // ints/specials: probability an element is nonzero / special
  int32_t exp_lo = 0, exp_hi = 0;  // mixed: exponent range
  Keep keep;                       // elements not kept are zero (the case's keep modifier)
  // Each stored value is first rounded to this compute precision's grid (f64:
  // not at all). Only the harness's class reference asks for it: the inputs
  // as a kernel sees them after converting them into its compute type.
  Compute rounded_to = Compute::f64;
  Patch patch;                     // elements changed against the same seed's draw
  Rotation rotation;               // the draw moved round (the patch stays where it says)
  // Whole rows of one value (row-wise ops' fully masked rows): each row of
  // the matrix view, with probability row_fill drawn from the seed and the
  // row, takes row_value in every kept element instead of the recipe's draw.
  double row_fill = 0.0;
  double row_value = 0.0;
  // offset: values in center + spread * [-1, 1). The default is a mean of 1e4
  // with a standard deviation of 1e-2 (spread / sqrt(3)): E[x^2] - E[x]^2 in
  // f32 loses every digit of the variance there.
  double center = 1e4;
  double spread = 0.017320508075688773;
  // One value planted at chosen positions (row-wise ops: a single NaN or Inf
  // at a row's start, middle or end, where IEEE fmax and NaN propagation part;
  // an extreme at both ends, for ties): each row of the matrix view, with
  // probability plant_fill, takes plant_value at its first, middle or last
  // column, or at both the first and the last, in turn by (row + seed) % 4.
  // plant_cols: the row length (0: nothing planted).
  double plant_fill = 0.0;
  double plant_value = 0.0;
  int64_t plant_cols = 0;
};

// Whether element (row, col) holds RecipeParams::plant_value.
ASSAY_HD bool planted(const RecipeParams& p, uint64_t seed, uint32_t tensor, uint64_t row, uint64_t col) {
  if (!(p.plant_fill > 0.0) || p.plant_cols <= 0) return false;
  if (unit_double(hash3(seed ^ 0x706c616e74ull, tensor, row)) >= p.plant_fill) return false;
  const uint64_t last = uint64_t(p.plant_cols - 1);
  switch ((row + seed) % 4) {
    case 0: return col == 0;
    case 1: return col == last / 2;
    case 2: return col == last;
    default: return col == 0 || col == last;
  }
}

// Raw (unrounded) value of element (row, col) of tensor `tensor`, the patch aside.
ASSAY_HD double drawn_value(const RecipeParams& p, DType t, uint64_t seed, uint32_t tensor,
                            uint64_t row, uint64_t col) {
  if (!keeps(p.keep, tensor, row, col)) return 0.0;
  if (p.row_fill > 0.0 && unit_double(hash3(seed ^ 0x726f7766696c6cull, tensor, row)) < p.row_fill)
    return p.row_value;
  if (planted(p, seed, tensor, row, col)) return p.plant_value;
  uint64_t idx = (row << 32) ^ col;  // rows and cols stay below 2^32 (generator bound)
  uint64_t h = hash3(seed, tensor, idx);
  double u = unit_double(h);
  switch (p.recipe) {
    case Recipe::ints: {
      uint64_t h2 = mix64(h);
      if (unit_double(h2) >= p.density) return 0.0;
      int64_t span = 2 * int64_t(p.int_range) + 1;
      int64_t v = int64_t(h % uint64_t(span)) - p.int_range;
      return double(v == 0 ? 1 : v);  // nonzero when chosen, so density means what it says
    }
    case Recipe::uniform:
      return 2.0 * u - 1.0;
    case Recipe::offset:
      return p.center + p.spread * (2.0 * u - 1.0);
    case Recipe::mixed: {
      uint64_t h2 = mix64(h);
      int span = p.exp_hi - p.exp_lo + 1;
      int e = p.exp_lo + int(h2 % uint64_t(span));
      double m = 2.0 * u - 1.0;
      // ldexp by repeated exact multiplication (identical on host and device)
      double s = 1.0;
      for (int i = 0; i < (e < 0 ? -e : e); ++i) s *= 2.0;
      return e < 0 ? m / s : m * s;
    }
    default: {  // specials
      uint64_t h2 = mix64(h);
      if (unit_double(h2) >= p.density) return 2.0 * u - 1.0;
      const double inf = f64_from_bits(0x7ff0000000000000ull);
      double tiny = 1.0;  // smallest subnormal of t, times a small integer
      int e = min_normal_exp(t) - (mantissa_bits(t) - 1);
      for (int i = 0; i < -e; ++i) tiny *= 0.5;
      switch (h2 % 7) {
        case 0: return 0.0;
        case 1: return -0.0;
        case 2: return inf;
        case 3: return -inf;
        case 4: return f64_from_bits(0x7ff8000000000000ull);
        case 5: return tiny * double(1 + (h >> 60));
        default: return -tiny * double(1 + (h >> 60));
      }
    }
  }
}

// Raw value of element (row, col): the recipe's (at the rotation's source),
// or where the patch covers a kept element, a value whose stored bits differ
// from the recipe's (nonzero even where an ints density would give 0, so the
// change is real).
ASSAY_HD double recipe_value(const RecipeParams& p, DType t, uint64_t seed, uint32_t tensor,
                             uint64_t row, uint64_t col) {
  const uint64_t from_row = p.rotation.source_row(row), from_col = p.rotation.source_col(col);
  const double old = drawn_value(p, t, seed, tensor, from_row, from_col);
  // A patch honours keep: the shrinker's cut to fewer nonzeros holds in every call.
  if (!p.patch.any() || !p.patch.covers(row, col) || !keeps(p.keep, tensor, from_row, from_col)) return old;
  RecipeParams q = p;
  q.keep = Keep{};
  q.patch = Patch{};
  q.rotation = Rotation{};
  if (q.recipe == Recipe::ints) q.density = 1.0;  // (for specials density is how many are special)
  for (uint64_t j = 0; j < 8; ++j) {
    const double v = drawn_value(q, t, p.patch.seed + j, tensor, row, col);
    if (encode(t, v) != encode(t, old)) return v;
  }
  return old == 1.0 ? -1.0 : 1.0;
}

// Stored bits of that element in dtype t.
ASSAY_HD uint64_t recipe_bits(const RecipeParams& p, DType t, uint64_t seed, uint32_t tensor,
                              uint64_t row, uint64_t col) {
  const double v = recipe_value(p, t, seed, tensor, row, col);
  if (p.rounded_to == Compute::f64) return encode(t, v);
  return encode(t, round_compute(p.rounded_to, round_to(t, v)));
}

}  // namespace assay
