#include "shrink/properties.h"

#include <algorithm>
#include <functional>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>


namespace assay::shrink_detail {
namespace {

// Divisibility of a size, or byte alignment of an offset or leading
// dimension, tried from the finest up; kTop (a tile, a cache line) first.
constexpr int64_t kRungs[] = {2, 4, 8, 16, 32};
constexpr int64_t kTop = 64;

enum class Seen { unrun, pass, same, other };  // unrun: outside the spec, or out of budget

// One property of the shrunk case and the cases that change only it.
struct Property {
  std::string name;                  // as `requires` names it: "len", "offset(X)", "ld(X)"
  int64_t value;                     // the shrunk case's
  int64_t unit;                      // bytes per unit of value; 1 for a size
  int64_t lo;                        // the rungs' values start here
  std::vector<int64_t> neighbours;   // probed first
  std::function<Case(int64_t)> with;
  std::function<std::string(int64_t)> lacks;  // for a rung: "len % 4 != 0", "X not 16-byte aligned"
};

class Prober {
 public:
  Prober(const Op& op, const Spec& spec, const CaseProbe& probe, Verdict verdict, RunClock& clock, int& runs)
      : op_(op), spec_(spec), probe_(probe), verdict_(verdict), clock_(clock), runs_(runs) {}

  Seen run(const Case& c) {
    if (runs_ >= start_ + kMaxPropertyRuns || clock_.out_of_time() || !inside_spec(op_, spec_, c)) return Seen::unrun;
    ++runs_;
    const Verdict v = clock_.run(probe_, c).verdict;
    return v == Verdict::pass ? Seen::pass : v == verdict_ ? Seen::same : Seen::other;
  }

  // "" when no probe passed.
  std::string note(const Property& p) {
    std::map<int64_t, Seen> seen;
    auto at = [&](int64_t x) {
      if (auto it = seen.find(x); it != seen.end()) return it->second;
      return seen[x] = run(p.with(x));
    };
    // The first value at or above lo that is a multiple of `step` bytes (of
    // exactly `step`, not 2 * step, when `exact`), other than the failing one.
    auto rung_value = [&](int64_t step, bool exact) {
      for (int64_t x = p.lo; x < p.lo + 4 * kTop; ++x)
        if (x != p.value && x * p.unit % step == 0 && !(exact && x * p.unit % (2 * step) == 0)) return x;
      return int64_t(-1);
    };
    for (int64_t x : p.neighbours) at(x);
    int64_t claim = 0;
    const int64_t top = rung_value(kTop, false);
    // A rung is worth climbing only when the top one passes: else no
    // divisibility up to kTop makes the failure go away.
    if (top >= 0 && at(top) == Seen::pass) {
      bool complete = true;
      for (int64_t r : kRungs) {
        if (p.value * p.unit % r == 0) continue;  // the failing value has it already
        const int64_t x = rung_value(r, true);
        const Seen s = x < 0 ? Seen::unrun : at(x);
        if (s == Seen::pass) {
          claim = r;
          break;
        }
        if (s == Seen::unrun) {
          complete = false;
          break;
        }
      }
      // 0 is a multiple of everything: its passing says nothing of alignment.
      if (!claim && complete && top != 0 && p.value * p.unit % kTop != 0) claim = kTop;
      // Fails again one step further (same residue): divisibility, not size.
      if (claim && at(p.value + claim / p.unit) != Seen::same) claim = 0;
    }
    std::vector<std::string> passes;
    for (auto& [x, s] : seen)
      if (s == Seen::pass) passes.push_back(fmt::format("{} = {}", p.name, x));
    if (passes.empty()) return "";
    return fmt::format("fails at {} = {}{}; passes for {}", p.name, p.value,
                       claim ? fmt::format(" ({})", p.lacks(claim)) : "", fmt::join(passes, ", "));
  }

 private:
  const Op& op_;
  const Spec& spec_;
  const CaseProbe& probe_;
  Verdict verdict_;
  RunClock& clock_;
  int& runs_;
  const int start_ = runs_;
};

// A tensor's layout as the op's with_layout takes it: orientation, padding
// beyond its rows (column-major) or columns (row-major), offset.
struct LayoutParts {
  bool col_major;
  int64_t pad, offset;
};
LayoutParts layout_parts(const TensorGeom& g) {
  const bool col = g.row_stride() == 1 && g.col_stride() != 1;
  const int64_t pad = col ? g.col_stride() - std::max<int64_t>(g.dim_rows(), 1)
                          : g.row_stride() - std::max<int64_t>(g.cols(), 1);
  return {col, std::max<int64_t>(pad, 0), g.offset};
}

bool same_layout(const CaseTensor& a, const CaseTensor& b) { return a.strides == b.strides && a.offset == b.offset; }

}  // namespace

std::vector<std::string> property_notes(const Op& op, const Spec& spec, const Case& shrunk, Verdict verdict,
                                        const CaseProbe& probe, RunClock& clock, int& runs) {
  Prober prober(op, spec, probe, verdict, clock, runs);
  std::vector<std::string> notes;
  auto add = [&](std::string note) {
    if (!note.empty()) notes.push_back(std::move(note));
  };
  // Layouts: a tensor the shrinker could not lay out as the op's plain cases
  // have it has one of these properties that matters (or the spec requires it).
  for (int t = 0; t < int(shrunk.tensors.size()); ++t) {
    const CaseTensor& ct = shrunk.tensors[size_t(t)];
    const Case plain = op.with_layout(shrunk, t, false, 0, 0);
    if (plain.tensors.size() == shrunk.tensors.size() && same_layout(plain.tensors[size_t(t)], ct)) continue;
    const TensorGeom g = ct.geom();
    const LayoutParts parts = layout_parts(g);
    const std::string& tensor = ct.name;
    auto with = [&, t](bool col_major, int64_t pad, int64_t offset) {
      return op.with_layout(shrunk, t, col_major, pad, offset);
    };
    if (parts.col_major && prober.run(with(false, parts.pad, parts.offset)) == Seen::pass)
      add(fmt::format("fails at {} column-major; passes for {} row-major", tensor, tensor));
    const int64_t unit = dtype_bytes(ct.dtype);
    if (parts.offset != 0)
      add(prober.note({fmt::format("offset({})", tensor), parts.offset, unit, 0, {},
                       [&](int64_t x) { return with(parts.col_major, parts.pad, x); },
                       [&](int64_t r) { return fmt::format("{} not {}-byte aligned", tensor, r); }}));
    // The leading dimension matters once it strides over two rows (columns).
    const int64_t lines = parts.col_major ? g.cols() : g.dim_rows();
    const int64_t compact = std::max<int64_t>(parts.col_major ? g.dim_rows() : g.cols(), 1);
    if (parts.pad != 0 && lines >= 2)
      add(prober.note({fmt::format("ld({})", tensor), compact + parts.pad, unit, compact, {compact},
                       [&](int64_t x) { return with(parts.col_major, x - compact, parts.offset); },
                       [&](int64_t r) {
                         return fmt::format("{} of {} not {}-byte aligned", parts.col_major ? "columns" : "rows",
                                            tensor, r);
                       }}));
  }
  // Sizes: each one's neighbours, then (when the next multiple of 64 passes)
  // its divisibility. An empty case passes trivially: not telling.
  std::vector<int64_t> sizes;
  for (const auto& s : shrunk.sizes) sizes.push_back(s.value);
  for (size_t d = 0; d < shrunk.sizes.size(); ++d) {
    const std::string& name = shrunk.sizes[d].name;
    const int64_t value = sizes[d];
    std::vector<int64_t> neighbours;
    if (value - 1 >= 1) neighbours.push_back(value - 1);
    neighbours.push_back(value + 1);
    add(prober.note({name, value, 1, value + 1, neighbours,
                     [&, d](int64_t x) {
                       std::vector<int64_t> v = sizes;
                       v[d] = x;
                       return op.resize(shrunk, v, /*keep_layout=*/true);
                     },
                     [&](int64_t r) { return fmt::format("{} % {} != 0", name, r); }}));
  }
  return notes;
}

}  // namespace assay::shrink_detail
