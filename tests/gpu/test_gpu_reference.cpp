// The device half must agree with the host half: fills bit for bit, and the
// cuBLAS FP64 reference with Eigen's on small cases of every layout and recipe.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "backend/backend.h"
#include "exec/guarded_tensor.h"
#include "ops/gemm/gemm_generator.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_reference.h"
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
