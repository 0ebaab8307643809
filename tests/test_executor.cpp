// The host pipeline end to end on kernels written here as plain functions:
// a correct GEMM passes, and each kind of misbehaviour gets its own verdict.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "backend/host/host_backend.h"
#include "exec/executor.h"
#include "exec/guarded_tensor.h"
#include "exec/runner.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"

using namespace assay;

namespace {

// A 2-D f32 DLTensor view.
struct Mat {
  char* base;
  int64_t rows, cols, rs, cs;
  explicit Mat(const DLTensor& t)
      : base(static_cast<char*>(t.data) + t.byte_offset), rows(t.shape[0]), cols(t.shape[1]),
        rs(t.strides ? t.strides[0] : t.shape[1]), cs(t.strides ? t.strides[1] : 1) {}
  float& at(int64_t r, int64_t c) const { return reinterpret_cast<float*>(base)[r * rs + c * cs]; }
};

bool is_f32_gemm(const assay_call* call) {
  if (call->abi_version != ASSAY_ABI_VERSION || call->num_inputs != 2 || call->num_outputs != 1 ||
      call->num_scalars != 2)
    return false;
  for (const DLTensor* t : {&call->inputs[0], &call->inputs[1], (const DLTensor*)&call->outputs[0]})
    if (t->ndim != 2 || t->dtype.code != kDLFloat || t->dtype.bits != 32) return false;
  return true;
}

// C = alpha*A*B + beta*C0 with a double accumulator and one final rounding;
// BLAS semantics: alpha == 0 skips A*B, beta == 0 never reads C0.
int naive_gemm(const assay_call* call) {
  if (!is_f32_gemm(call)) return ASSAY_UNSUPPORTED;
  Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < A.cols; ++p) acc += double(A.at(i, p)) * double(B.at(p, j));
      double r = alpha == 0 ? 0.0 : alpha * acc;
      if (beta != 0) r += beta * double(C.at(i, j));
      C.at(i, j) = float(r);
    }
  return ASSAY_OK;
}

int writes_before_c(const assay_call* call) {
  int rc = naive_gemm(call);
  Mat C(call->outputs[0]);
  reinterpret_cast<float*>(C.base)[-1] = 0.0f;  // C[-1]: one element before C's first
  return rc;
}

int writes_c_padding(const assay_call* call) {
  int rc = naive_gemm(call);
  Mat C(call->outputs[0]);
  C.at(0, C.cols) = 1.0f;  // row-major, padded: the gap after row 0
  return rc;
}

int modifies_a(const assay_call* call) {
  int rc = naive_gemm(call);
  Mat A(call->inputs[0]);
  A.at(A.rows - 1, A.cols - 1) += 1.0f;
  return rc;
}

int unsupported(const assay_call*) { return ASSAY_UNSUPPORTED; }
int returns_seven(const assay_call* call) {
  naive_gemm(call);
  return 7;
}
int throws(const assay_call*) { throw std::runtime_error("kernel blew up"); }
int writes_nothing(const assay_call*) { return ASSAY_OK; }

// Memoizes its first answer for each shape (m, n, k) and replays it on every
// later call of that shape: the cheat that keys a cache on the problem's
// size. Keyed by shape so a run of many cases never replays an answer of
// another size (which would read past the memo and make verdicts depend on
// what the heap held).
std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<float>> g_memo;
int memoizes(const assay_call* call) {
  Mat C(call->outputs[0]);
  std::vector<float>& memo = g_memo[{C.rows, C.cols, call->inputs[0].shape[1]}];
  if (memo.empty()) {
    int rc = naive_gemm(call);
    for (int64_t i = 0; i < C.rows; ++i)
      for (int64_t j = 0; j < C.cols; ++j) memo.push_back(C.at(i, j));
    return rc;
  }
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) C.at(i, j) = memo[size_t(i * C.cols + j)];
  return ASSAY_OK;
}

// Computes on the first call only, then leaves C as it found it.
int g_stale_calls = 0;
int stale(const assay_call* call) { return g_stale_calls++ == 0 ? naive_gemm(call) : ASSAY_OK; }

// Correct, but odd-numbered calls are one ulp up: always within tolerance,
// never bitwise reproducible.
int g_flaky_calls = 0;
int flaky(const assay_call* call) {
  int rc = naive_gemm(call);
  if (++g_flaky_calls % 2 == 1) {
    Mat C(call->outputs[0]);
    for (int64_t i = 0; i < C.rows; ++i)
      for (int64_t j = 0; j < C.cols; ++j) C.at(i, j) = std::nextafter(C.at(i, j), INFINITY);
  }
  return rc;
}

// Counts calls, to see how often the executor calls.
int g_counted_calls = 0;
int counted(const assay_call* call) {
  ++g_counted_calls;
  return naive_gemm(call);
}

// Records each call's A, B and C (as handed: C0 when beta != 0) by logical
// position, then computes correctly.
std::vector<std::vector<std::vector<float>>> g_calls_seen;  // per call: A, B, C row-major
int records_calls(const assay_call* call) {
  std::vector<std::vector<float>> seen;
  for (const DLTensor* t : {&call->inputs[0], &call->inputs[1], (const DLTensor*)&call->outputs[0]}) {
    Mat x(*t);
    std::vector<float> v;
    for (int64_t i = 0; i < x.rows; ++i)
      for (int64_t j = 0; j < x.cols; ++j) v.push_back(x.at(i, j));
    seen.push_back(std::move(v));
  }
  g_calls_seen.push_back(std::move(seen));
  return naive_gemm(call);
}

gemm::Problem make_case(int64_t m, int64_t n, int64_t k, double alpha, double beta, Recipe r = Recipe::uniform) {
  gemm::Problem c;
  c.m = m, c.n = n, c.k = k;
  c.a = gemm::make_layout(m, k, false), c.b = gemm::make_layout(k, n, false), c.c = gemm::make_layout(m, n, false);
  c.alpha = alpha, c.beta = beta, c.recipe = r;
  c.seed = 0x1234567 + uint64_t(m * 1000 + n);
  return c;
}

ExecOptions options(bool deterministic = true, bool keep = false, bool exact = false) {
  ExecOptions opt;
  opt.compute = Compute::f32;
  opt.deterministic = deterministic;
  opt.keep_tensors = keep;
  opt.exact_alloc = exact;
  return opt;
}

const Op& gemm_op() { return op_of(Spec{}); }  // a spec built in code: GEMM

CaseOutcome run(assay_run_fn fn, const gemm::Problem& c, bool deterministic = true, bool keep = false, bool exact = false) {
  HostBackend be;
  InProcessRunner runner(fn);
  return run_case(gemm_op(), be, runner, gemm::to_case(c), options(deterministic, keep, exact));
}

std::vector<gemm::Problem> varied_cases() {
  std::vector<gemm::Problem> cases;
  cases.push_back(make_case(7, 9, 11, 1, 0));                            // beta = 0: poisoned C
  cases.push_back(make_case(16, 17, 33, 1.3, 0.7, Recipe::ints));
  cases.push_back(make_case(5, 3, 64, -1, 1, Recipe::mixed));
  cases.push_back(make_case(9, 8, 20, 1, 0, Recipe::specials));
  cases.push_back(make_case(4, 6, 0, 0.7, 1.3));                          // k = 0: C = beta*C0
  cases.push_back(make_case(0, 6, 5, 1, 0));                              // empty output
  gemm::Problem padded = make_case(13, 11, 19, 0.7, -1);
  padded.a = gemm::make_layout(13, 19, true, 3, 1);                       // transposed, padded, offset
  padded.b = gemm::make_layout(19, 11, false, 5, 2);
  padded.c = gemm::make_layout(13, 11, false, 4, 3);
  cases.push_back(padded);
  gemm::Problem padded0 = padded;                                                  // and with beta = 0
  padded0.beta = 0;
  padded0.c = gemm::make_layout(13, 11, true, 2, 1);
  cases.push_back(padded0);
  return cases;
}

}  // namespace

TEST_CASE("executor: a correct GEMM passes on varied cases", "[executor]") {
  for (auto& c : varied_cases()) {
    INFO(describe(gemm::to_case(c)));
    CaseOutcome o = run(naive_gemm, c);
    INFO(o.detail);
    CHECK(o.verdict == Verdict::pass);
    CHECK(o.call == 0);
    CHECK(o.stats.checked == c.m * c.n);
    CHECK(o.stats.bad == 0);
  }
}

TEST_CASE("executor: four calls when deterministic, three otherwise; tensors kept on request", "[executor]") {
  gemm::Problem c = make_case(6, 5, 4, 1, 1);
  g_counted_calls = 0;
  CHECK(run(counted, c, true).verdict == Verdict::pass);
  CHECK(g_counted_calls == 4);
  g_counted_calls = 0;
  CaseOutcome o = run(counted, c, false, true);
  CHECK(o.verdict == Verdict::pass);
  CHECK(g_counted_calls == 3);
  // per tensor A, B, C: reference and bound for the output only
  REQUIRE(o.tensors.ref.size() == 3);
  REQUIRE(o.tensors.bound.size() == 3);
  CHECK(o.tensors.ref[gemm::A].empty());
  CHECK(o.tensors.ref[gemm::C].size() == 30);
  CHECK(o.tensors.bound[gemm::C].size() == 30);
  REQUIRE(o.tensors.before.size() == 3);
  REQUIRE(o.tensors.after.size() == 3);
  CHECK_FALSE(o.tensors.before[gemm::A].empty());
  CHECK_FALSE(o.tensors.before[gemm::C].empty());  // beta = 1: C0 as handed
  CHECK(o.tensors.after[gemm::A].empty());         // inputs have no after image
  CHECK_FALSE(o.tensors.after[gemm::C].empty());
  // the kept output is the kernel's call-1 output: it matches the reference
  // to within f32 rounding
  auto g = gemm::tensors(c)[gemm::C];
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      const std::byte* data = o.tensors.after[gemm::C].data() + o.tensors.data_start;
      double got = decode(DType::f32, load_bits(DType::f32, data + g.index(i, j) * 4));
      double ref = o.tensors.ref[gemm::C][size_t(i * c.n + j)];
      CHECK(std::fabs(got - ref) <= 1e-5 * o.tensors.bound[gemm::C][size_t(i * c.n + j)] + 1e-30);
    }
}

TEST_CASE("executor: GEMM's call 2 is call 1 moved round, call 3 call 2 with the sparse change", "[executor]") {
  for (gemm::Problem c : {make_case(6, 5, 4, 1, 1), make_case(9, 1, 3, 0.5, 2), make_case(1, 7, 5, 1, 0)}) {
    c.a = gemm::make_layout(c.m, c.k, true, 1, 2);  // the moves are logical: any layout
    INFO(describe(gemm::to_case(c)));
    const Relabeling moved = gemm::relabeling(c);
    REQUIRE(moved.of.size() == 3);
    const int64_t r = moved.of[gemm::C].by_rows, s = moved.of[gemm::C].by_cols;
    CHECK(r == moved.of[gemm::A].by_rows);
    CHECK(s == moved.of[gemm::B].by_cols);
    CHECK((c.m > 1 ? r >= 1 && r < c.m : r == 0));
    CHECK((c.n > 1 ? s >= 1 && s < c.n : s == 0));
    g_calls_seen.clear();
    CHECK(run(records_calls, c).verdict == Verdict::pass);
    REQUIRE(g_calls_seen.size() == 4);
    const int64_t rows[3] = {c.m, c.k, c.m}, cols[3] = {c.k, c.n, c.n};
    const int64_t by_rows[3] = {r, 0, r}, by_cols[3] = {0, s, s};
    int moved_elements = 0;
    for (int t = 0; t < 3; ++t) {
      if (t == gemm::C && c.beta == 0) continue;  // poison, not drawn
      for (int64_t i = 0; i < rows[t]; ++i)
        for (int64_t j = 0; j < cols[t]; ++j) {
          const float was = g_calls_seen[0][t][size_t((i + by_rows[t]) % rows[t] * cols[t] + (j + by_cols[t]) % cols[t])];
          const float now = g_calls_seen[1][t][size_t(i * cols[t] + j)];
          CHECK(now == was);
          moved_elements += g_calls_seen[0][t][size_t(i * cols[t] + j)] != now;
        }
    }
    CHECK(moved_elements > 0);  // the values changed place
    // Call 3: call 2's but for the change; call 4: call 3's.
    const SparseChange change = gemm::sparse_change(c);
    REQUIRE(change.tensor >= 0);
    int changed = 0;
    for (int t = 0; t < 3; ++t)
      for (size_t e = 0; e < g_calls_seen[1][size_t(t)].size(); ++e) {
        if (t == gemm::C && c.beta == 0) continue;
        const bool differs = g_calls_seen[2][size_t(t)][e] != g_calls_seen[1][size_t(t)][e];
        if (t != change.tensor) CHECK_FALSE(differs);
        changed += differs;
        CHECK(g_calls_seen[3][size_t(t)][e] == g_calls_seen[2][size_t(t)][e]);
      }
    CHECK(changed > 0);
    // The changed tensor, rewritten in place where the change covers it,
    // holds call 3's draw whole: moved round as call 2's, the patch applied.
    const int t = change.tensor;
    RecipeParams p = gemm_op().params_for(gemm::to_case(c), t);
    p.rotation = moved.of[size_t(t)], p.patch = change.patch;
    for (int64_t i = 0; i < rows[t]; ++i)
      for (int64_t j = 0; j < cols[t]; ++j)
        CHECK(g_calls_seen[2][size_t(t)][size_t(i * cols[t] + j)] ==
              float(decode(DType::f32, recipe_bits(p, DType::f32, c.seed, uint32_t(t), uint64_t(i), uint64_t(j)))));
  }
}

TEST_CASE("executor: a broadcast operand's call 2 is drawn afresh, not moved", "[executor]") {
  gemm::Problem c = make_case(6, 5, 4, 1, 0);
  c.a = gemm::Layout{0, 1, 0};  // every row of A the same memory
  g_calls_seen.clear();
  CHECK(run(records_calls, c).verdict == Verdict::pass);
  REQUIRE(g_calls_seen.size() == 4);
  // Call 2's A is one row repeated, as call 1's, but with other values.
  for (int64_t i = 1; i < c.m; ++i)
    for (int64_t j = 0; j < c.k; ++j) CHECK(g_calls_seen[1][0][size_t(i * c.k + j)] == g_calls_seen[1][0][size_t(j)]);
  int differ = 0;
  for (int64_t j = 0; j < c.k; ++j) differ += g_calls_seen[1][0][size_t(j)] != g_calls_seen[0][0][size_t(j)];
  CHECK(differ > 0);
}

TEST_CASE("executor: writing C[-1] is an out-of-bounds write", "[executor]") {
  CaseOutcome o = run(writes_before_c, make_case(8, 8, 8, 1, 0));
  CHECK(o.verdict == Verdict::out_of_bounds_write);
  CHECK(o.call == 1);
  CHECK(o.detail.find("C") != std::string::npos);
}

int writes_after_c(const assay_call* call) {
  int rc = naive_gemm(call);
  Mat C(call->outputs[0]);
  C.at(C.rows - 1, C.cols) = 0.0f;  // compact: one past the last element
  return rc;
}

// A large dense output has only its guards painted and checked (the rest
// is its elements): writes just outside it are still caught, where they are.
TEST_CASE("executor: writes next to a large dense C are out-of-bounds writes, at their byte", "[executor]") {
  const gemm::Problem c = make_case(512, 520, 2, 1, 0);  // C: over 1 MiB
  const CaseOutcome before = run(writes_before_c, c), after = run(writes_after_c, c);
  CHECK(before.verdict == Verdict::out_of_bounds_write);
  CHECK(before.detail.find("C byte -4 outside") != std::string::npos);
  CHECK(after.verdict == Verdict::out_of_bounds_write);
  CHECK(after.detail.find(fmt::format("C byte {} outside", 512 * 520 * 4)) != std::string::npos);
  CHECK(run(naive_gemm, c).verdict == Verdict::pass);
  INFO(before.detail << " / " << after.detail);
}

TEST_CASE("executor: writing into C's row padding is an out-of-bounds write", "[executor]") {
  gemm::Problem c = make_case(8, 8, 8, 1, 1);
  c.c = gemm::make_layout(8, 8, false, 2);
  CaseOutcome o = run(writes_c_padding, c);
  CHECK(o.verdict == Verdict::out_of_bounds_write);
  // without padding the same store lands on C(1, 0), an element: not out of bounds
  // (but the value is wrong)
  CaseOutcome o2 = run(writes_c_padding, make_case(8, 8, 8, 1, 1));
  CHECK(o2.verdict != Verdict::out_of_bounds_write);
  CHECK(o2.verdict != Verdict::pass);
}

TEST_CASE("executor: changing an input is input_modified", "[executor]") {
  CaseOutcome o = run(modifies_a, make_case(8, 7, 6, 1, 0));
  CHECK(o.verdict == Verdict::input_modified);
  CHECK(o.call == 1);
  CHECK(o.detail.find("A") != std::string::npos);
}

TEST_CASE("executor: return codes and exceptions", "[executor]") {
  gemm::Problem c = make_case(4, 5, 6, 1, 0);
  SECTION("ASSAY_UNSUPPORTED inside the spec is rejected") {
    CaseOutcome o = run(unsupported, c);
    CHECK(o.verdict == Verdict::rejected);
    CHECK(o.call == 1);
  }
  SECTION("any other nonzero code is a kernel error") {
    CaseOutcome o = run(returns_seven, c);
    CHECK(o.verdict == Verdict::kernel_error);
    CHECK(o.detail.find('7') != std::string::npos);
  }
  SECTION("an exception is a kernel error carrying its message") {
    CaseOutcome o = run(throws, c);
    CHECK(o.verdict == Verdict::kernel_error);
    CHECK(o.detail.find("kernel blew up") != std::string::npos);
  }
}

TEST_CASE("executor: writing nothing with beta = 0 is unwritten output", "[executor]") {
  CaseOutcome o = run(writes_nothing, make_case(6, 6, 6, 1, 0));
  CHECK(o.verdict == Verdict::unwritten_output);
  CHECK(o.call == 1);
  CHECK(o.stats.unwritten == 36);
}

TEST_CASE("executor: replaying an earlier answer is a cached result", "[executor]") {
  g_memo.clear();
  CaseOutcome o = run(memoizes, make_case(9, 10, 11, 1, 0));
  CHECK(o.verdict == Verdict::cached_result);
  CHECK(o.call == 2);
  g_memo.clear();
  CaseOutcome o2 = run(memoizes, make_case(9, 10, 11, 1.3, 0.7));
  CHECK(o2.verdict == Verdict::cached_result);
}

TEST_CASE("executor: leaving C as found on a later call is a stale result", "[executor]") {
  g_stale_calls = 0;
  CaseOutcome o = run(stale, make_case(9, 10, 11, 1, 1));
  CHECK(o.verdict == Verdict::stale_result);
  CHECK(o.call == 2);
}

TEST_CASE("executor: one ulp on odd calls is nondeterministic only when determinism is claimed", "[executor]") {
  gemm::Problem c = make_case(12, 13, 14, 1, 0);
  g_flaky_calls = 0;
  CaseOutcome o = run(flaky, c, true);
  CHECK(o.verdict == Verdict::nondeterministic);
  CHECK(o.call == 4);
  g_flaky_calls = 0;
  CaseOutcome o2 = run(flaky, c, false);
  INFO(o2.detail);
  CHECK(o2.verdict == Verdict::pass);
  CHECK(o2.stats.max_ulps <= 1);
}

// Exact allocations (`assay repro --exact-alloc`, issue #13): each tensor the
// kernel sees is its own allocation of exactly its extent, with no guard
// zone, so that a memory checker sees an access past it.

namespace {

// The host backend, recording what each allocation asked for.
class RecordingBackend final : public Backend {
 public:
  struct Allocation {
    const std::byte* data;
    size_t bytes;
    bool exact;
  };
  std::vector<Allocation> allocations;

  BackendKind kind() const override { return host_.kind(); }
  DLDevice device() const override { return host_.device(); }
  void* stream() override { return nullptr; }
  size_t memory_budget() const override { return host_.memory_budget(); }
  Buffer allocate(size_t bytes) override { return record(host_.allocate(bytes), false); }
  Buffer allocate_exact(size_t bytes) override { return record(host_.allocate_exact(bytes), true); }
  void release(Buffer& b) override { host_.release(b); }
  void fill_pattern(Buffer b, uint64_t pattern, int width) override { host_.fill_pattern(b, pattern, width); }
  void fill_tensor(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed, uint32_t t) override {
    host_.fill_tensor(b, g, p, seed, t);
  }
  void fill_constant(Buffer b, const TensorGeom& g, uint64_t bits) override { host_.fill_constant(b, g, bits); }
  void copy_rotated(Buffer d, Buffer s, const TensorGeom& g, const Rotation& r) override { host_.copy_rotated(d, s, g, r); }
  void download(Buffer b, std::byte* h) override { host_.download(b, h); }
  void download_range(Buffer b, size_t o, size_t n, std::byte* h) override { host_.download_range(b, o, n, h); }
  void upload(Buffer b, const std::byte* h) override { host_.upload(b, h); }
  void copy(Buffer dst, Buffer src) override { host_.copy(dst, src); }
  std::optional<size_t> first_difference(Buffer x, Buffer y) override { return host_.first_difference(x, y); }
  void copy_elements(Buffer dst, Buffer src, const TensorGeom& g) override { host_.copy_elements(dst, src, g); }
  void read(const void* p, size_t bytes, void* h) override { host_.read(p, bytes, h); }
  CompareStats compare(const Tolerance& tol, const TensorGeom& g, const std::byte* out, const double* ref,
                       const double* bound, const double* terms, const ClassRefs& classes) override {
    return host_.compare(tol, g, out, ref, bound, terms, classes);
  }
  std::optional<Buffer> owner_of(const void* p) const override { return host_.owner_of(p); }
  std::string synchronize() override { return {}; }

 private:
  Buffer record(Buffer b, bool exact) {
    allocations.push_back({b.data, b.bytes, exact});
    return b;
  }
  HostBackend host_;
};

// Where each call's A, B and C started (DLTensor.data) and their byte_offset.
struct Seen {
  const std::byte* data[3];
  uint64_t byte_offset[3];
};
std::vector<Seen> g_seen;
int records_tensors(const assay_call* call) {
  const DLTensor* t[3] = {&call->inputs[0], &call->inputs[1], &call->outputs[0]};
  Seen s;
  for (int i = 0; i < 3; ++i) s.data[i] = static_cast<const std::byte*>(t[i]->data), s.byte_offset[i] = t[i]->byte_offset;
  g_seen.push_back(s);
  return naive_gemm(call);
}

gemm::Problem padded_case() {  // transposed A, padded rows, base offsets on every tensor
  gemm::Problem c = make_case(13, 11, 19, 0.7, -1);
  c.a = gemm::make_layout(13, 19, true, 3, 1);
  c.b = gemm::make_layout(19, 11, false, 5, 2);
  c.c = gemm::make_layout(13, 11, false, 4, 3);
  return c;
}

}  // namespace

TEST_CASE("exact allocation: a tensor's buffer is its extent, offset included, and nothing more", "[executor][exact]") {
  HostBackend be;
  // 5 x 3 f32, rows 4 apart, 2 elements of base offset: extent 2 + 4*4 + 2 + 1 = 21 elements
  const TensorGeom g = TensorGeom::matrix(DType::f32, 5, 3, 4, 1, 2);
  REQUIRE(g.span() == 21);
  GuardedTensor exact(be, g, Allocation::exact);
  CHECK(exact.guard() == 0);
  CHECK(exact.buffer().bytes == 21 * 4);
  CHECK(exact.data() == exact.buffer().data);
  CHECK(reinterpret_cast<uintptr_t>(exact.data()) % 256 == 0);  // abi.md: the data start is 256-byte aligned
  CHECK_FALSE(be.owner_of(exact.data()));                        // not a memfd: no worker can map it
  // The padding inside the extent still holds the canary, and is checked.
  exact.paint_canary();
  CHECK_FALSE(exact.first_damage(exact.buffer()));
  exact.buffer().data[size_t(g.index(0, 3)) * 4] = std::byte{0};  // row 0's padding (host memory)
  CHECK(exact.first_damage(exact.buffer()) == size_t(g.index(0, 3)) * 4);

  GuardedTensor guarded(be, g);  // the gate's: guard zones on both sides, a memfd
  CHECK(guarded.guard() == kGuardBytes);
  CHECK(guarded.data() == guarded.buffer().data + kGuardBytes);
  CHECK(guarded.buffer().bytes >= 21 * 4 + 2 * kGuardBytes);
  CHECK(be.owner_of(guarded.data()));

  TensorGeom empty = g;  // no element: one element's bytes, so that the data start is still an address
  empty.shape[0] = 0, empty.offset = 0;
  GuardedTensor none(be, empty, Allocation::exact);
  CHECK(none.buffer().bytes == 4);
  none.paint_canary();
  CHECK_FALSE(none.first_damage(none.buffer()));
}

TEST_CASE("exact allocation: the kernel is handed each tensor's own exact allocation", "[executor][exact]") {
  const gemm::Problem c = padded_case();
  const auto geoms = gemm::tensors(c);
  for (bool exact : {true, false}) {
    INFO("exact " << exact);
    RecordingBackend be;
    InProcessRunner runner(records_tensors);
    g_seen.clear();
    CHECK(run_case(gemm_op(), be, runner, gemm::to_case(c), options(true, false, exact)).verdict == Verdict::pass);
    REQUIRE(g_seen.size() == 4);
    for (const Seen& s : g_seen)
      for (int i = 0; i < 3; ++i) {
        INFO("tensor " << i);
        CHECK(s.byte_offset[i] == uint64_t(geoms[i].offset) * 4);
        const RecordingBackend::Allocation* owner = nullptr;
        for (auto& a : be.allocations)
          if (a.data <= s.data[i] && s.data[i] < a.data + a.bytes) owner = &a;
        REQUIRE(owner);
        CHECK(owner->exact == exact);
        if (exact) {
          CHECK(s.data[i] == owner->data);  // no guard zone before the data
          CHECK(owner->bytes == size_t(geoms[i].span()) * 4);
        } else {
          CHECK(s.data[i] == owner->data + kGuardBytes);
        }
      }
    // The three tensors are three allocations.
    CHECK(g_seen[0].data[0] != g_seen[0].data[1]);
    CHECK(g_seen[0].data[1] != g_seen[0].data[2]);
  }
}

TEST_CASE("exact allocation: verdicts stay what they are with guards", "[executor][exact]") {
  for (auto& c : varied_cases()) {
    INFO(describe(gemm::to_case(c)));
    CaseOutcome o = run(naive_gemm, c, true, false, true);
    INFO(o.detail);
    CHECK(o.verdict == Verdict::pass);
    CHECK(o.stats.checked == c.m * c.n);
  }
  gemm::Problem padded = make_case(8, 8, 8, 1, 1);
  padded.c = gemm::make_layout(8, 8, false, 2);
  CHECK(run(writes_c_padding, padded, true, false, true).verdict == Verdict::out_of_bounds_write);
  CHECK(run(modifies_a, make_case(8, 8, 8, 1, 0), true, false, true).verdict == Verdict::input_modified);
  CHECK(run(writes_nothing, make_case(8, 8, 8, 1, 0), true, false, true).verdict == Verdict::unwritten_output);
  // Planned cases (staged inputs, captures) take the same layout.
  HostBackend be;
  InProcessRunner runner(naive_gemm);
  std::vector<Case> cases = {gemm::to_case(padded_case()), gemm::to_case(make_case(7, 9, 11, 1, 0))};
  for (const CaseOutcome& o : run_cases(gemm_op(), be, runner, cases, options(true, false, true))) {
    INFO(o.detail);
    CHECK(o.verdict == Verdict::pass);
  }
  // Tensors kept for --dump start where the data starts.
  CaseOutcome kept = run(naive_gemm, padded_case(), true, true, true);
  CHECK(kept.tensors.data_start == 0);
  REQUIRE(kept.tensors.after.size() == 3);
  CHECK(kept.tensors.after[gemm::C].size() == size_t(gemm::tensors(padded_case())[gemm::C].span()) * 4);
  CHECK(kept.tensors.before[gemm::A].size() == size_t(gemm::tensors(padded_case())[gemm::A].span()) * 4);
}

namespace {

// GEMM as it is, but for what each judged call was told of its inputs
// (JudgeInput::since_memo, ::upcoming), which it records.
class WatchedJudging final : public Op {
 public:
  struct Seen {
    InputDelta::Kind since;
    std::optional<SparseChange> upcoming;  // a copy: the executor's lives as long as the case run
  };
  explicit WatchedJudging(const Op& op) : op_(op) {}
  mutable std::vector<Seen> seen;
  mutable size_t deadline_at = 0;  // > 0: that judged call (1-based) meets the deadline (a long comparison's check)

  std::string_view name() const override { return op_.name(); }
  void validate(const Case& c) const override { op_.validate(c); }
  std::unique_ptr<EvalContext> context(const Case& c) const override { return op_.context(c); }
  std::unique_ptr<EvalContext> names_context() const override { return op_.names_context(); }
  std::vector<Case> sweep(const Spec& s, uint64_t seed, const SweepTarget& t) const override { return op_.sweep(s, seed, t); }
  std::optional<Case> random_case(const Spec& s, uint64_t seed, uint64_t i, const GenLimits& l) const override {
    return op_.random_case(s, seed, i, l);
  }
  std::optional<Case> fit_requires(const Case& c, const Spec& s) const override { return op_.fit_requires(c, s); }
  bool huge_case_fits(const Case& c, const SweepTarget& t) const override { return op_.huge_case_fits(c, t); }
  double work(const Case& c) const override { return op_.work(c); }
  double case_bytes(const Case& c) const override { return op_.case_bytes(c); }
  double host_bytes(const Case& c, BackendKind b) const override { return op_.host_bytes(c, b); }
  double default_timeout(const Case& c, BackendKind b) const override { return op_.default_timeout(c, b); }
  bool plannable(const Case& c) const override { return op_.plannable(c); }
  RecipeParams recipe_params(const Case& c, int t) const override { return op_.recipe_params(c, t); }
  bool reads_initial(const Case& c, int t) const override { return op_.reads_initial(c, t); }
  SparseChange sparse_change(const Case& c) const override { return op_.sparse_change(c); }
  Relabeling relabeling(const Case& c) const override { return op_.relabeling(c); }
  std::vector<std::vector<double>> reference(Backend& be, const Case& c,
                                             std::span<const std::byte* const> d) const override {
    return op_.reference(be, c, d);
  }
  CompareStats judge(Backend& be, const JudgeInput& in) const override {
    seen.push_back({in.since_memo.kind, in.upcoming ? std::optional(*in.upcoming) : std::nullopt});
    if (seen.size() == deadline_at) throw DeadlineReached("the comparison was still running at the deadline");
    return op_.judge(be, in);
  }
  Case resize(const Case& c, std::span<const int64_t> s, bool k) const override { return op_.resize(c, s, k); }
  std::vector<Case> simplifications(const Case& c) const override { return op_.simplifications(c); }
  Case with_layout(const Case& c, int t, bool cm, int64_t p, int64_t o) const override {
    return op_.with_layout(c, t, cm, p, o);
  }
  Case decode(const uint8_t* d, size_t n, const Spec& s, const CodecLimits& l) const override { return op_.decode(d, n, s, l); }
  std::vector<uint8_t> encode(const Case& c, const CodecLimits& l) const override { return op_.encode(c, l); }
  Case mutate(const Case& c, uint64_t r, const CodecLimits& l) const override { return op_.mutate(c, r, l); }
  std::vector<Case> seed_cases(const Spec& s) const override { return op_.seed_cases(s); }
  baseline::BaselineResult run_baseline(std::string_view rule, Backend& be, Runner& r, const Spec& s,
                                        const baseline::BaselineOptions& o) const override {
    return op_.run_baseline(rule, be, r, s, o);
  }

 private:
  const Op& op_;
};

}  // namespace

// What an op may derive a call's reference from: call 2 is call 1 moved
// round, call 3 call 2 with the sparse change, and when call 2 is judged it
// is told that change is next (JudgeInput::upcoming, GEMM's rank-1 update on
// cuda keeps a row of B for it); call 4's bits equal call 3's, not judged.
TEST_CASE("executor: each judged call is told how its inputs relate to the last judged one's and the next", "[executor]") {
  WatchedJudging op(gemm_op());
  for (const bool planned : {false, true}) {
    const gemm::Problem c = make_case(6, 5, 4, 1, 1);
    const Case cs = gemm::to_case(c);
    HostBackend be;
    InProcessRunner runner(naive_gemm);
    op.seen.clear();
    const CaseOutcome o = planned ? run_case_planned(op, be, runner, cs, options(true, false, false))
                                  : run_case(op, be, runner, cs, options(true, false, false));
    INFO((planned ? "planned" : "one call at a time") << ": " << o.detail);
    CHECK(o.verdict == Verdict::pass);
    REQUIRE(op.seen.size() == 3);
    CHECK(op.seen[0].since == InputDelta::Kind::fresh);
    CHECK_FALSE(op.seen[0].upcoming);  // call 2 is call 1 moved round, no sparse change
    CHECK(op.seen[1].since == InputDelta::Kind::relabeled);
    REQUIRE(op.seen[1].upcoming);
    const SparseChange change = gemm::sparse_change(c);
    CHECK(op.seen[1].upcoming->tensor == change.tensor);
    CHECK(op.seen[1].upcoming->patch.row == change.patch.row);
    CHECK(op.seen[1].upcoming->patch.listed == change.patch.listed);
    CHECK(op.seen[2].since == InputDelta::Kind::sparse);
    CHECK_FALSE(op.seen[2].upcoming);  // call 4 repeats call 3's inputs
  }
}

// A judgement that meets the deadline (the comparisons check it between
// blocks) stops a planned exchange as a stopped call does: the cases
// judged whole before it come back with the stop, none lost.
TEST_CASE("executor: a planned exchange whose judging meets the deadline keeps the cases it finished", "[executor]") {
  WatchedJudging op(gemm_op());
  op.deadline_at = 4;  // three judged calls a case: the second case's first
  HostBackend be;
  InProcessRunner runner(naive_gemm);
  std::vector<Case> cases;
  for (int64_t m : {5, 6, 7}) cases.push_back(gemm::to_case(make_case(m, 4, 3, 1, 0)));
  try {
    run_cases(op, be, runner, cases, options());
    FAIL("the exchange was not stopped");
  } catch (const CasesStopped& e) {
    REQUIRE(e.finished.size() == 1);
    CHECK(e.finished[0].verdict == Verdict::pass);
    CHECK(std::string(e.what()).find("deadline") != std::string::npos);
  }
}

// Backend::begin_batch lets a backend hold a batch's fills, paints and
// copies until the batch ends (the cuda backend launches them together).
// A host backend that really holds them: the executor must end each batch
// before anything reads what it wrote (the candidate in process, which
// reads memory directly; the reference), and every other backend call
// does its held work first, as the contract says. Verdicts are then those
// of the plain host backend, planned and one call at a time.
namespace {

class HoldingBackend final : public Backend {
 public:
  int batches = 0, held = 0;  // batches begun, work held in them

  BackendKind kind() const override { return host_.kind(); }
  DLDevice device() const override { return host_.device(); }
  void* stream() override { return nullptr; }
  size_t memory_budget() const override { return host_.memory_budget(); }
  Buffer allocate(size_t bytes) override { return host_.allocate(bytes); }
  Buffer allocate_exact(size_t bytes) override { return host_.allocate_exact(bytes); }
  void release(Buffer& b) override { launch(), host_.release(b); }
  void fill_pattern(Buffer b, uint64_t pattern, int width) override {
    hold([=, this] { host_.fill_pattern(b, pattern, width); });
  }
  void fill_tensor(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed, uint32_t t) override {
    hold([=, this] { host_.fill_tensor(b, g, p, seed, t); });
  }
  void fill_constant(Buffer b, const TensorGeom& g, uint64_t bits) override {
    hold([=, this] { host_.fill_constant(b, g, bits); });
  }
  void copy(Buffer dst, Buffer src) override { hold([=, this] { host_.copy(dst, src); }); }
  void fill_patched(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed, uint32_t t) override {
    launch(), host_.fill_patched(b, g, p, seed, t);
  }
  void copy_rotated(Buffer d, Buffer s, const TensorGeom& g, const Rotation& r) override {
    launch(), host_.copy_rotated(d, s, g, r);
  }
  void download(Buffer b, std::byte* h) override { launch(), host_.download(b, h); }
  void download_range(Buffer b, size_t o, size_t n, std::byte* h) override { launch(), host_.download_range(b, o, n, h); }
  void upload(Buffer b, const std::byte* h) override { launch(), host_.upload(b, h); }
  std::optional<size_t> first_difference(Buffer x, Buffer y) override { return launch(), host_.first_difference(x, y); }
  void copy_elements(Buffer dst, Buffer src, const TensorGeom& g) override { launch(), host_.copy_elements(dst, src, g); }
  void read(const void* p, size_t bytes, void* h) override { launch(), host_.read(p, bytes, h); }
  CompareStats compare(const Tolerance& tol, const TensorGeom& g, const std::byte* out, const double* ref,
                       const double* bound, const double* terms, const ClassRefs& classes) override {
    return launch(), host_.compare(tol, g, out, ref, bound, terms, classes);
  }
  std::optional<Buffer> owner_of(const void* p) const override { return host_.owner_of(p); }
  std::string synchronize() override { return launch(), std::string{}; }
  void begin_batch() override { ++depth_, ++batches; }
  void end_batch() override {
    if (--depth_ == 0) launch();
  }

 private:
  template <class F> void hold(F&& work) {
    if (depth_ == 0) return work();
    held_work_.push_back(std::forward<F>(work)), ++held;
  }
  void launch() {
    for (auto& w : held_work_) w();
    held_work_.clear();
  }
  HostBackend host_;
  int depth_ = 0;
  std::vector<std::function<void()>> held_work_;
};

}  // namespace

TEST_CASE("executor: a backend that holds each batch's work until its end gives the plain backend's verdicts",
          "[executor][batch]") {
  struct Kernel {
    assay_run_fn fn;
    Verdict expect;
  } kernels[] = {{naive_gemm, Verdict::pass},
                 {modifies_a, Verdict::input_modified},
                 {writes_before_c, Verdict::out_of_bounds_write},
                 {memoizes, Verdict::cached_result}};
  std::vector<Case> cases;  // the varied cases with elements in every tensor (the bad kernels write there)
  for (const gemm::Problem& p : varied_cases())
    if (p.m > 0 && p.n > 0 && p.k > 0) cases.push_back(gemm::to_case(p));
  for (const Kernel& k : kernels)
    for (bool planned : {false, true}) {
      INFO("expect " << name(k.expect) << (planned ? ", planned" : ", one call at a time"));
      HoldingBackend held;
      HostBackend plain;
      InProcessRunner runner(k.fn);
      auto outcomes = [&](Backend& be) {
        g_memo.clear();  // memoizes' answer from an earlier run
        if (planned) return run_cases(gemm_op(), be, runner, cases, options());
        std::vector<CaseOutcome> out;
        for (const Case& c : cases) out.push_back(run_case(gemm_op(), be, runner, c, options()));
        return out;
      };
      const std::vector<CaseOutcome> got = outcomes(held), want = outcomes(plain);
      CHECK(held.batches > 0);
      CHECK(held.held > 0);  // the batches held work, so an early read would have seen it missing
      REQUIRE(got.size() == want.size());
      for (size_t j = 0; j < got.size(); ++j) {
        INFO(describe(cases[j]) << ": " << got[j].detail);
        CHECK(got[j].verdict == want[j].verdict);
        CHECK(got[j].call == want[j].call);
        CHECK(got[j].stats.bad == want[j].stats.bad);
      }
      const bool any = std::any_of(got.begin(), got.end(), [&](const CaseOutcome& o) { return o.verdict == k.expect; });
      CHECK(any);
    }
}
