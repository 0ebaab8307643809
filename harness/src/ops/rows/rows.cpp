#include "ops/rows/rows.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "case/rng.h"
#include "core/error.h"

namespace assay::rows {
namespace {

[[noreturn]] void bad(const Case& c, const std::string& why) {
  throw InputError(fmt::format("not a {} case: {} ({})", c.op, why, describe(c)));
}

// The inner matrix's span in elements (at least one row and column).
int64_t inner_span(const Shape& s, const Layout& l) {
  const int64_t r = std::max<int64_t>(s.rows, 1), n = std::max<int64_t>(s.n, 1);
  return l.col_major ? n * (r + l.pad) : r * (n + l.pad);
}
int64_t row_span(const Shape& s, const Layout& l) { return std::max<int64_t>(s.rows, 1) * (1 + l.pad); }

}  // namespace

// ---- shape ----

Shape shape_of(const Case& c) {
  Shape s;
  if (c.sizes.size() == 2 && c.sizes[0].name == "rows" && c.sizes[1].name == "n") {
    s.rows = c.sizes[0].value, s.n = c.sizes[1].value;
  } else if (c.sizes.size() == 3 && c.sizes[0].name == "b" && c.sizes[1].name == "rows" && c.sizes[2].name == "n") {
    s.batched = true, s.b = c.sizes[0].value, s.rows = c.sizes[1].value, s.n = c.sizes[2].value;
  } else {
    bad(c, "its sizes must be rows, n or b, rows, n");
  }
  if (s.b < 0 || s.rows < 0 || s.n < 0) bad(c, "sizes must not be negative");
  return s;
}

std::vector<Named<int64_t>> sizes_of(const Shape& s) {
  if (s.batched) return {{"b", s.b}, {"rows", s.rows}, {"n", s.n}};
  return {{"rows", s.rows}, {"n", s.n}};
}

std::optional<double> variable(const Shape& s, std::string_view name) {
  if (name == "b") return double(s.batched ? s.b : 1);
  if (name == "rows") return double(s.rows);
  if (name == "n") return double(s.n);
  return std::nullopt;
}
bool is_size_name(std::string_view n) { return n == "b" || n == "rows" || n == "n"; }

// ---- layouts ----

Layout transposed(int64_t pad, int64_t offset) { return Layout{true, pad, offset, 0, false}; }
Layout padded(int64_t pad, int64_t offset) { return Layout{false, pad, offset, 0, false}; }
Layout plain_like(const Layout& l) { return Layout{l.col_major, 0, 0, 0, false}; }

CaseTensor element_tensor(const char* name, Role role, DType t, const Shape& s, const Layout& l) {
  CaseTensor x;
  x.name = name, x.role = role, x.dtype = t, x.offset = l.offset;
  const int64_t r = std::max<int64_t>(s.rows, 1), n = std::max<int64_t>(s.n, 1);
  const int64_t rs = l.col_major ? 1 : n + l.pad, cs = l.col_major ? r + l.pad : 1;
  if (s.batched) {
    x.shape = {s.b, s.rows, s.n};
    x.strides = {inner_span(s, l) + l.batch_gap, rs, cs};
  } else {
    x.shape = {s.rows, s.n};
    x.strides = {rs, cs};
  }
  return x;
}

CaseTensor row_tensor(const char* name, Role role, DType t, const Shape& s, const Layout& l) {
  CaseTensor x;
  x.name = name, x.role = role, x.dtype = t, x.offset = l.offset;
  if (s.batched) {
    x.shape = {s.b, s.rows};
    x.strides = {row_span(s, l) + l.batch_gap, 1 + l.pad};
  } else {
    x.shape = {s.rows};
    x.strides = {1 + l.pad};
  }
  return x;
}

CaseTensor column_tensor(const char* name, Role role, DType t, const Shape& s, const Layout& l) {
  CaseTensor x;
  x.name = name, x.role = role, x.dtype = t, x.offset = l.offset;
  x.shape = {s.n};
  x.strides = {l.broadcast ? 0 : 1 + l.pad};
  return x;
}

Layout layout_of(const CaseTensor& t, const Shape& s, Kind kind) {
  Layout l;
  l.offset = t.offset;
  const size_t d = t.strides.size();
  if (d == 0) return l;
  switch (kind) {
    case Kind::element: {
      if (d < 2) return l;
      const int64_t rs = t.strides[d - 2], cs = t.strides[d - 1];
      l.col_major = cs != 1;
      l.pad = std::max<int64_t>(0, l.col_major ? cs - std::max<int64_t>(s.rows, 1) : rs - std::max<int64_t>(s.n, 1));
      if (d == 3) l.batch_gap = std::max<int64_t>(0, t.strides[0] - inner_span(s, l));
      return l;
    }
    case Kind::row:
      l.pad = std::max<int64_t>(0, t.strides[d - 1] - 1);
      if (d == 2) l.batch_gap = std::max<int64_t>(0, t.strides[0] - row_span(s, l));
      return l;
    case Kind::column:
      l.broadcast = t.strides[0] == 0;
      l.pad = std::max<int64_t>(0, t.strides[0] - 1);
      return l;
  }
  return l;
}

std::vector<int64_t> expected_shape(const Shape& s, Kind kind) {
  switch (kind) {
    case Kind::element: return s.batched ? std::vector<int64_t>{s.b, s.rows, s.n} : std::vector<int64_t>{s.rows, s.n};
    case Kind::row: return s.batched ? std::vector<int64_t>{s.b, s.rows} : std::vector<int64_t>{s.rows};
    case Kind::column: return {s.n};
  }
  return {};
}

void validate_tensors(const Case& c, std::span<const TensorRule> rules, std::span<const char* const> scalar_names) {
  const Shape s = shape_of(c);
  if (c.tensors.size() != rules.size()) {
    std::vector<std::string> names;
    for (const TensorRule& r : rules) names.emplace_back(r.name);
    bad(c, fmt::format("it must have tensors {}", fmt::join(names, ", ")));
  }
  for (size_t i = 0; i < rules.size(); ++i) {
    const CaseTensor& t = c.tensors[i];
    const TensorRule& r = rules[i];
    if (t.name != r.name) bad(c, fmt::format("tensor {} must be named {}", i, r.name));
    if (t.role != r.role) bad(c, fmt::format("{} must be an {}", t.name, name(r.role)));
    const std::vector<int64_t> want = expected_shape(s, r.kind);
    if (t.shape != want) bad(c, fmt::format("{} must have shape [{}]", t.name, fmt::join(want, ", ")));
    if (t.strides.size() != t.shape.size()) bad(c, fmt::format("{} needs one stride per dimension", t.name));
  }
  if (c.scalars.size() != scalar_names.size()) {
    if (scalar_names.empty()) bad(c, "it takes no scalars");
    bad(c, fmt::format("its scalars must be {}", fmt::join(scalar_names, ", ")));
  }
  for (size_t i = 0; i < scalar_names.size(); ++i)
    if (c.scalars[i].name != scalar_names[i]) bad(c, fmt::format("scalar {} must be named {}", i, scalar_names[i]));
}

// ---- blocks ----

std::vector<RowBlock> row_blocks(const Shape& s) {
  std::vector<RowBlock> out;
  const int64_t total = s.total_rows(), n = std::max<int64_t>(s.n, 1);
  if (total == 0) return out;
  const int64_t per_block = std::max<int64_t>(1, kBlockElements / n);
  if (!s.batched || s.rows * n <= kBlockElements) {
    // 2-D, or whole batches per block.
    const int64_t step = s.batched ? std::max<int64_t>(1, per_block / s.rows) * s.rows : per_block;
    for (int64_t r = 0; r < total; r += step) out.push_back({r, std::min(step, total - r)});
    return out;
  }
  for (int64_t b = 0; b < s.b; ++b)
    for (int64_t r = 0; r < s.rows; r += per_block) out.push_back({b * s.rows + r, std::min(per_block, s.rows - r)});
  return out;
}

double block_elements(const Shape& s) {
  // The first block is the largest (only the last of a run is shorter), so
  // the list is not made: a case file's 2^31 x 2^31 would have 2^31 blocks.
  const int64_t total = s.total_rows(), n = std::max<int64_t>(s.n, 1);
  if (total == 0) return 0;
  const int64_t per_block = std::max<int64_t>(1, kBlockElements / n);
  int64_t rows = std::min(per_block, s.rows);
  if (!s.batched || s.rows * n <= kBlockElements) {
    const int64_t step = s.batched ? std::max<int64_t>(1, per_block / s.rows) * s.rows : per_block;
    rows = std::min(step, total);
  }
  return double(rows) * double(n);
}

TensorGeom block_geom(const TensorGeom& g, const Shape& s, const RowBlock& b) {
  TensorGeom part = g;
  // Leading (batch) and row dimensions: per-row tensors lack the last one.
  const bool per_row = g.ndim == (s.batched ? 2 : 1);
  if (!s.batched) {
    part.shape[0] = b.rows, part.offset = g.offset + b.row0 * g.strides[0];
    return part;
  }
  if (b.row0 % s.rows == 0 && b.rows % s.rows == 0) {  // whole batches
    part.shape[0] = b.rows / s.rows, part.offset = g.offset + (b.row0 / s.rows) * g.strides[0];
    return part;
  }
  // Rows of one batch, as a tensor without the batch dimension.
  const int64_t batch = b.row0 / s.rows, r = b.row0 % s.rows;
  const int64_t base = g.offset + batch * g.strides[0] + r * g.strides[1];
  if (per_row) {
    part.ndim = 1, part.shape[0] = b.rows, part.strides[0] = g.strides[1], part.offset = base;
    return part;
  }
  return TensorGeom::matrix(g.dtype, b.rows, g.shape[2], g.strides[1], g.strides[2], base);
}

// ---- costs ----

double buffer_bytes(const TensorGeom& g) { return double(g.span()) * dtype_bytes(g.dtype) + 2.0 * 1024 + 8; }

double role_bytes(const Case& c, Role role) {
  double b = 0;
  for (size_t i = 0; i < c.tensors.size(); ++i)
    if ((c.tensors[i].role == Role::input) == (role == Role::input)) b += buffer_bytes(c.geom(int(i)));
  return b;
}

double case_bytes(const Case& c, double per_element) {
  double tensors = 0, out = 0;
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const double b = buffer_bytes(c.geom(int(i)));
    tensors += b;
    if (c.tensors[i].role != Role::input) out += b;
  }
  // Live and as handed (snapshots), the call before's outputs (the
  // executor's look back), and the device reference's block.
  return 2 * tensors + out + 2 * 4096 + per_element * block_elements(shape_of(c));
}

double host_bytes(const Case& c, BackendKind backend, double per_element) {
  double in = 0, out = 0, largest_in = 0;
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const double b = buffer_bytes(c.geom(int(i)));
    if (c.tensors[i].role == Role::input) in += b, largest_in = std::max(largest_in, b);
    else out += b;
  }
  const double block = per_element * block_elements(shape_of(c));
  // The executor's host images: one changed input's, or this call's outputs
  // (the call before's stay in backend memory) with the reference's block.
  double bytes = std::max(largest_in, out + block) + double(16 << 20);
  if (backend == BackendKind::host) {
    bytes += 2 * (in + out) + out;  // live, as handed, the call before's outputs
    if (case_bytes(c, per_element) <= double(1 << 20)) bytes += 15 * (in + out);  // planned: staged sets, captures
  }
  return bytes;
}

// ---- sweeps ----

SweepBuilder::SweepBuilder(uint64_t seed, std::function<std::optional<Case>(const Case&)> fit)
    : seed_(seed), fit_(std::move(fit)) {
  section();
}

void SweepBuilder::section() {
  if (sections_.empty() || !sections_.back().empty()) sections_.emplace_back();
}

void SweepBuilder::add(const Case& c) {
  auto fitted = fit_(c);
  if (!fitted) return;
  fitted->seed = mix64(seed_ ^ (made_ * 0x9e3779b97f4a7c15ull));
  Case key = *fitted;
  key.seed = 0, key.origin.clear();
  if (!seen_.insert(describe(key)).second) return;
  sections_.back().push_back(*fitted);
  ++made_;
}

std::vector<Case> SweepBuilder::interleaved() const {
  std::vector<Case> out;
  for (size_t i = 0; out.size() < made_; ++i)
    for (auto& s : sections_)
      if (i < s.size()) out.push_back(s[i]);
  return out;
}

std::optional<Case> fit_requires(const Spec& spec, const Case& c, const ContextOf& context, const Remake& remake) {
  auto holds = [&](const Case& x) {
    const auto ctx = context(x);
    return std::all_of(spec.requires_.begin(), spec.requires_.end(), [&](auto& r) { return r.holds(*ctx); });
  };
  if (holds(c)) return c;
  const Shape s0 = shape_of(c);
  auto first = [&](const std::vector<Shape>& shapes) -> std::optional<Case> {
    for (const Shape& s : shapes)
      for (int relax = 0; relax < 4; ++relax)
        if (Case x = remake(s, relax); holds(x)) return x;
    return std::nullopt;
  };
  std::vector<Shape> shapes{s0};
  for (int64_t mult = 2; mult <= 1024; mult *= 2) {  // rounded up to multiples
    auto up = [mult](int64_t v) { return std::max<int64_t>((v + mult - 1) / mult * mult, v == 0 ? 0 : mult); };
    Shape q = s0;
    q.n = up(s0.n);
    shapes.push_back(q);
    q.rows = up(s0.rows);
    shapes.push_back(q);
  }
  for (int64_t div = 2; div <= (int64_t(1) << 20); div *= 2) {  // halved (upper limits)
    Shape q = s0;
    q.n = std::max<int64_t>(1, s0.n / div);
    shapes.push_back(q);
    q.rows = std::max<int64_t>(1, s0.rows / div);
    shapes.push_back(q);
  }
  if (auto x = first(shapes)) return x;
  if (s0.batched)  // flattened to 2-D
    if (auto x = first({Shape{false, 1, s0.total_rows(), s0.n}})) return x;
  return std::nullopt;
}

// ---- random cases ----

RandomDraw::RandomDraw(uint64_t seed, uint64_t salt, uint64_t index) : state_(hash3(seed, salt, index)) {}
uint64_t RandomDraw::next() { return state_ = mix64(state_); }

int64_t RandomDraw::dim(const GenLimits& lim) {
  const int64_t max_dim = std::max<int64_t>(lim.max_random_dim, 1);
  const uint64_t r = next() % 100;
  if (r < 35) return int64_t(next() % uint64_t(std::min<int64_t>(max_dim, 64) + 1));
  if (r < 65) {  // a power of two and its neighbours
    const int64_t t = int64_t(1) << (next() % 11);
    return std::clamp<int64_t>(t + int64_t(next() % 3) - 1, 0, max_dim);
  }
  return int64_t(std::pow(double(max_dim), unit_double(next())));
}

Shape RandomDraw::shape(const GenLimits& lim, int64_t max_n) {
  Shape s{false, 1, dim(lim), dim(lim)};
  if (next() % 5 == 0) s.batched = true, s.b = int64_t(1 + next() % 4);
  while (s.elements() > lim.max_random_work) {
    int64_t& big = s.rows > s.n ? s.rows : s.n;
    big /= 2;
  }
  s.n = std::min(s.n, max_n);
  return s;
}

Layout RandomDraw::layout(const Shape& s) {
  Layout l;
  l.col_major = next() % 4 == 0;
  l.pad = next() % 10 < 3 ? int64_t(1 + next() % 16) : 0;
  l.offset = next() % 10 < 2 ? int64_t(1 + next() % 3) : 0;
  l.batch_gap = s.batched && next() % 2 ? int64_t(next() % 9) : 0;
  return l;
}

Recipe RandomDraw::recipe(std::span<const Recipe> from) { return from[next() % from.size()]; }

}  // namespace assay::rows
