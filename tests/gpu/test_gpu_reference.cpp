// The device half must agree with the host half: fills bit for bit, and the
// cuBLAS FP64 reference with Eigen's on small cases of every layout and recipe.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/backend.h"
#include "exec/guarded_tensor.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_reference.h"
#include "ops/gemm/gemm_tolerance.h"
#include "exec/patterns.h"
#include "gemm_cases.h"

using namespace assay;

namespace {

gemm::Problem small_case(uint64_t i, DType t) { return test::varied_gemm_case(i, t, 40, 33, 0, 1000); }

// Fills the case's operands on one backend and returns their host images and the reference.
struct Filled {
  std::vector<std::byte> img[3];
  gemm::ReferenceResult ref;
};
Filled fill_and_reference(Backend& be, const gemm::Problem& c) {
  auto g = gemm::tensors(c);
  Filled f;
  std::unique_ptr<GuardedTensor> t[3];
  for (int i = 0; i < 3; ++i) {
    t[i] = std::make_unique<GuardedTensor>(be, g[i]);
    t[i]->paint_canary();
    TensorGeom shifted = g[i];
    shifted.offset += int64_t(kGuardBytes / dtype_bytes(g[i].dtype));
    be.fill_tensor(t[i]->buffer(), shifted, gemm::recipe_params(c, gemm::Operand(i)), c.seed, i);
  }
  for (int i = 0; i < 3; ++i) f.img[i] = t[i]->download();
  f.ref = gemm::reference(be, c, t[0]->data(), t[1]->data(), t[2]->data());
  return f;
}

}  // namespace

TEST_CASE("device fills and cuBLAS reference match the host's", "[gpu][reference]") {
  auto gpu = make_backend(BackendKind::cuda);
  auto cpu = make_backend(BackendKind::host);
  for (DType t : {DType::f64, DType::f32, DType::f16, DType::bf16})
    for (uint64_t i = 0; i < 24; ++i) {
      gemm::Problem c = small_case(i, t);
      INFO(describe(gemm::to_case(c)));
      Filled d = fill_and_reference(*gpu, c), h = fill_and_reference(*cpu, c);
      for (int j = 0; j < 3; ++j) {
        REQUIRE(d.img[j].size() == h.img[j].size());
        CHECK(std::memcmp(d.img[j].data(), h.img[j].data(), d.img[j].size()) == 0);
      }
      for (size_t e = 0; e < d.ref.ref.size(); ++e) {
        double x = d.ref.ref[e], y = h.ref.ref[e];
        if (std::isnan(y)) { CHECK(std::isnan(x)); continue; }
        if (std::isinf(y)) { CHECK(x == y); continue; }
        // Both are FP64 sums of the same exact products; only their order differs.
        CHECK(std::fabs(x - y) <= 1e-13 * (h.ref.bound[e] + 1e-300));
        double bd = d.ref.bound[e], bh = h.ref.bound[e];
        if (std::isfinite(bh)) CHECK(std::fabs(bd - bh) <= 1e-13 * bh);
        else CHECK((std::isnan(bd) == std::isnan(bh) && (std::isnan(bh) || bd == bh)));
      }
    }
}

// The one-pass comparison (the result formed from the FP64 products as it is
// judged: reference::compare_with_products) gives what the block-by-block
// comparison gives on the host, on outputs near the reference with planted
// faults, for every layout, recipe and scalar the varied cases take.
TEST_CASE("the one-pass GEMM comparison on the device equals the host's block comparison", "[gpu][reference][compare]") {
  auto gpu = make_backend(BackendKind::cuda);
  auto cpu = make_backend(BackendKind::host);
  int planted = 0;
  for (uint64_t i = 0; i < 24; ++i) {
    gemm::Problem c = small_case(i, DType::f32);
    INFO(describe(gemm::to_case(c)));
    const auto g = gemm::tensors(c);
    const Tolerance tol = gemm::tolerance(c, Compute::f32, 1.0, poison_bits(DType::f32));
    // An output from the host's reference, rounded to f32, every 17th element far off.
    Filled h = fill_and_reference(*cpu, c);
    std::vector<std::byte> out(size_t(std::max<int64_t>(g[2].span(), 1)) * 4, std::byte{0});
    for (int64_t r = 0; r < c.m; ++r)
      for (int64_t col = 0; col < c.n; ++col) {
        const size_t e = size_t(r * c.n + col);
        const double v = e % 17 == 3 ? h.ref.ref[e] + 1.0 + h.ref.bound[e] : h.ref.ref[e];
        planted += e % 17 == 3;
        store_bits(DType::f32, out.data() + g[2].index(r, col) * 4, encode(DType::f32, v));
      }
    CompareStats s[2];
    Backend* be[2] = {gpu.get(), cpu.get()};
    for (int b = 0; b < 2; ++b) {
      std::unique_ptr<GuardedTensor> t[3];
      for (int j = 0; j < 3; ++j) {
        t[j] = std::make_unique<GuardedTensor>(*be[b], g[j]);
        be[b]->upload(t[j]->buffer(), h.img[j].data());  // the device's fills are the same bits (above)
      }
      Buffer o = be[b]->allocate(out.size());
      be[b]->upload(o, out.data());
      s[b] = gemm::compare_to_reference(*be[b], c, tol, o.data, t[0]->data(), t[1]->data(), t[2]->data(),
                                        Deadline{});
      be[b]->release(o);
    }
    CHECK(s[0].checked == s[1].checked);
    CHECK(s[0].bad == s[1].bad);
    CHECK(s[0].bad_class == s[1].bad_class);
    CHECK(s[0].unwritten == s[1].unwritten);
    CHECK(s[0].exact_checked == s[1].exact_checked);
    CHECK(s[0].finite == s[1].finite);
    REQUIRE(s[0].first_bad.size() == s[1].first_bad.size());
    for (size_t k = 0; k < s[0].first_bad.size(); ++k) {
      CHECK(s[0].first_bad[k].row == s[1].first_bad[k].row);
      CHECK(s[0].first_bad[k].col == s[1].first_bad[k].col);
      CHECK(std::memcmp(&s[0].first_bad[k].got, &s[1].first_bad[k].got, sizeof(double)) == 0);  // NaNs too
      // Both FP64 sums of the same exact products, in another order.
      const double x = s[0].first_bad[k].expected, y = s[1].first_bad[k].expected;
      if (std::isfinite(y)) CHECK(x == Approx(y).epsilon(1e-12));
      else CHECK((std::isnan(x) == std::isnan(y) && (std::isnan(y) || x == y)));
    }
  }
  CHECK(planted > 50);
}

// A large GEMM's bound |A||B| is summed by TF32 tensor cores and raised
// past their rounding (ops/gemm/gemm_reference_cuda.cu): never below the
// exact FP64 sum, at most 2^-6 above it; A*B stays the DGEMM's. An operand
// outside the TF32 range (here one huge element, or a NaN) takes the DGEMM
// for the bound too.
TEST_CASE("a large GEMM's TF32 bound is never below the FP64 one, and close to it", "[gpu][reference][compare]") {
  auto gpu = make_backend(BackendKind::cuda);
  auto cpu = make_backend(BackendKind::host);
  gemm::Problem c;
  c.m = 2048, c.n = 2048, c.k = 256;  // 2^30 multiply-adds: the TF32 bound's least work
  c.a = gemm::make_layout(c.m, c.k, true, 3), c.b = gemm::make_layout(c.k, c.n, false, 5);
  c.c = gemm::make_layout(c.m, c.n, false);
  c.beta = 0.5, c.seed = 77;
  Filled d = fill_and_reference(*gpu, c);
  const auto g = gemm::tensors(c);
  const size_t a00 = kGuardBytes + size_t(g[0].index(0, 0)) * 4;  // A(0, 0) in A's buffer image
  for (const double planted : {0.0, 0x1p45, double(NAN)}) {
    INFO("A(0, 0) planted: " << planted);
    std::vector<std::byte> img_a = d.img[0];
    if (planted != 0.0) store_bits(DType::f32, img_a.data() + a00, encode(DType::f32, planted));
    gemm::ReferenceResult r[2];
    Backend* be[2] = {gpu.get(), cpu.get()};
    for (int b = 0; b < 2; ++b) {
      std::unique_ptr<GuardedTensor> t[3];
      for (int j = 0; j < 3; ++j) {
        t[j] = std::make_unique<GuardedTensor>(*be[b], g[j]);
        be[b]->upload(t[j]->buffer(), (j == 0 ? img_a : d.img[j]).data());
      }
      r[b] = gemm::reference(*be[b], c, t[0]->data(), t[1]->data(), t[2]->data());
    }
    size_t raised = 0, below = 0, far_above = 0, ref_off = 0;
    for (size_t e = 0; e < r[1].bound.size(); ++e) {
      const double bd = r[0].bound[e], bh = r[1].bound[e], x = r[0].ref[e], y = r[1].ref[e];
      if (std::isnan(y) || std::isnan(bh)) {
        ref_off += !std::isnan(x) || !std::isnan(bd);
        continue;
      }
      ref_off += !(std::fabs(x - y) <= 1e-13 * bh);
      below += bd < bh * (1 - 1e-13);
      far_above += bd > bh * (1 + 0x1p-6);
      raised += bd > bh * (1 + 1e-13);
    }
    CHECK(ref_off == 0);
    CHECK(below == 0);
    CHECK(far_above == 0);
    if (planted == 0.0) CHECK(raised > r[1].bound.size() / 2);  // the TF32 bound was taken
    else CHECK(raised == 0);                                     // the DGEMM was
  }
}

// The executor's in-place draws (exec/executor.cpp: call 2 moved round,
// call 3 patched) on the device equal the host's, and equal the device's
// own whole draw with the rotation and the patch.
TEST_CASE("device in-place draws (moved round, patched) equal whole draws", "[gpu][reference]") {
  auto gpu = make_backend(BackendKind::cuda);
  auto cpu = make_backend(BackendKind::host);
  for (uint64_t i = 0; i < 12; ++i) {
    gemm::Problem c = small_case(i, i % 2 ? DType::f16 : DType::f32);
    c.k = std::max<int64_t>(c.k, 2), c.a = gemm::make_layout(c.m, c.k, i % 2, i % 3, i % 2);  // A has elements
    c.b = gemm::make_layout(c.k, c.n, false);
    INFO(describe(gemm::to_case(c)));
    const TensorGeom a = gemm::tensors(c)[0];
    TensorGeom g = a;
    g.offset += int64_t(kGuardBytes / dtype_bytes(a.dtype));
    const RecipeParams plain = gemm::recipe_params(c, gemm::A);
    RecipeParams moved = plain;
    moved.rotation = Rotation{int64_t(i % uint64_t(a.rows())), int64_t((i * 3) % uint64_t(a.cols())), a.rows(), a.cols()};
    RecipeParams patched = moved;
    patched.patch.seed = 9;
    if (i % 2) patched.patch.row = int64_t(i % uint64_t(a.rows()));
    else patched.patch.listed = 2, patched.patch.at[0] = keep_position(0, 0), patched.patch.at[1] = keep_position(uint64_t(a.rows() - 1), 1);
    std::vector<std::byte> img[3];  // gpu in place, cpu in place, gpu whole
    Backend* be[3] = {gpu.get(), cpu.get(), gpu.get()};
    for (int b = 0; b < 3; ++b) {
      GuardedTensor src(*be[b], a), dst(*be[b], a);
      src.paint_canary(), dst.paint_canary();
      if (b < 2) {
        be[b]->fill_tensor(src.buffer(), g, plain, c.seed, 0);
        be[b]->copy_rotated(dst.buffer(), src.buffer(), g, moved.rotation);
        be[b]->fill_patched(dst.buffer(), g, patched, c.seed, 0);
      } else {
        be[b]->fill_tensor(dst.buffer(), g, patched, c.seed, 0);
      }
      img[b] = dst.download();
    }
    CHECK(img[0] == img[1]);
    CHECK(img[0] == img[2]);
  }
}

// Backend::begin_batch: the fills, paints and copies a batch holds and
// launches together (a launch per wave of independent work) leave every
// byte as the same calls launched one at a time do: dependent work on one
// buffer in its order (a paint under a draw, a copy of a drawn buffer, a
// copy of that copy, a paint over a buffer a copy read), padded and offset
// layouts, a broadcast tensor, work too big to hold (launched alone, after
// what is held), and a download inside the batch (launches what is held).
TEST_CASE("a batch's held fills, paints and copies leave the bytes one-at-a-time launches leave", "[gpu][reference][batch]") {
  auto gpu = make_backend(BackendKind::cuda);
  for (uint64_t i = 0; i < 16; ++i) {
    const DType t = i % 3 == 0 ? DType::f16 : i % 3 == 1 ? DType::f32 : DType::bf16;
    gemm::Problem c = small_case(i, t);
    if (i == 5)  // A past what a batch holds
      c.m = 700, c.k = 600, c.a = gemm::make_layout(c.m, c.k, false), c.c = gemm::make_layout(c.m, c.n, true, 3);
    auto g = gemm::tensors(c);
    std::vector<TensorGeom> geoms(g.begin(), g.end());
    geoms.push_back(TensorGeom::matrix(t, 9, 13, 0, 1, 2));  // every row the same: drawn once
    INFO(describe(gemm::to_case(c)));
    std::vector<std::vector<std::byte>> img[2], mid[2];
    for (int batched = 0; batched < 2; ++batched) {
      std::vector<std::unique_ptr<GuardedTensor>> x, y;
      std::vector<Buffer> snap, again;
      for (const TensorGeom& tg : geoms) {
        x.push_back(std::make_unique<GuardedTensor>(*gpu, tg));
        y.push_back(std::make_unique<GuardedTensor>(*gpu, tg));
        snap.push_back(gpu->allocate(x.back()->buffer().bytes));
        again.push_back(gpu->allocate(x.back()->buffer().bytes));
      }
      if (batched) gpu->begin_batch();
      for (size_t k = 0; k < geoms.size(); ++k) {
        TensorGeom shifted = geoms[k];
        shifted.offset += int64_t(kGuardBytes / dtype_bytes(shifted.dtype));
        const RecipeParams p = k < 3 ? gemm::recipe_params(c, gemm::Operand(k)) : RecipeParams{};
        x[k]->paint_canary_around();
        gpu->fill_tensor(x[k]->buffer(), shifted, p, c.seed + k, uint32_t(k));
        y[k]->paint_canary();
        gpu->fill_constant(y[k]->buffer(), shifted, poison_bits(shifted.dtype));
        gpu->copy(snap[k], x[k]->buffer());
        gpu->copy(again[k], snap[k]);
        if (k == 1) mid[batched].push_back(x[0]->download());  // held work first
        gpu->fill_pattern(snap[k], 0x5a5a5a5a5a5a5a5aull, 8);
      }
      if (batched) gpu->end_batch();
      for (size_t k = 0; k < geoms.size(); ++k) {
        img[batched].push_back(x[k]->download());
        img[batched].push_back(y[k]->download());
        for (Buffer b : {snap[k], again[k]}) {
          std::vector<std::byte> h(b.bytes);
          gpu->download(b, h.data());
          img[batched].push_back(std::move(h));
        }
        gpu->release(snap[k]), gpu->release(again[k]);
      }
    }
    REQUIRE(img[0].size() == img[1].size());
    for (size_t k = 0; k < img[0].size(); ++k) {
      INFO("image " << k);
      CHECK(img[0][k] == img[1][k]);
    }
    CHECK(mid[0] == mid[1]);
  }
}
