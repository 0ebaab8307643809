#include "ops/gemm/gemm_reference.h"

#include <algorithm>

#include "backend/cuda/cuda_backend.h"
#include "ops/gemm/gemm_problem.h"
#include "ops/gemm/gemm_tolerance.h"
#include "reference/device/gemm_cublas.h"
#include "reference/host/gemm_eigen.h"

namespace assay::gemm {

ReferenceResult reference(Backend& backend, const Case& c, const std::byte* a, const std::byte* b,
                          const std::byte* c0) {
  auto t = tensors(c);
  reference::GemmOperands op{a, t[A], b, t[B], c.beta != 0.0 ? c0 : nullptr, t[C], c.alpha, c.beta};
  ReferenceResult r;
  r.ref.resize(size_t(c.m * c.n));
  r.bound.resize(size_t(c.m * c.n));
  r.terms.resize(size_t(c.m * c.n));
  const reference::GemmResult out{r.ref.data(), r.bound.data(), r.terms.data()};
  if (backend.kind() == BackendKind::cuda) {
    auto& cuda = static_cast<CudaBackend&>(backend);
    reference::gemm_cublas(cuda.cublas(), cuda.stream(), op, out);
  } else {
    reference::gemm_eigen(op, out);
  }
  return r;
}

std::vector<std::vector<double>> class_references(Backend& backend, const Case& c, Compute compute,
                                                  const std::array<RecipeParams, 3>& drawn, uint64_t seed) {
  auto t = tensors(c);
  struct Scratch {  // released however the reference ends
    Backend& be;
    Buffer b[3];
    ~Scratch() {
      for (Buffer& x : b)
        if (x.data) be.release(x);
    }
  } scratch{backend, {}};
  auto draw = [&](int i, Compute into) {
    RecipeParams p = drawn[i];
    p.rounded_to = into;
    if (!scratch.b[i].data)
      scratch.b[i] = backend.allocate(size_t(std::max<int64_t>(t[i].span(), 1)) * dtype_bytes(t[i].dtype));
    backend.fill_tensor(scratch.b[i], t[i], p, seed, uint32_t(i));
  };
  auto ref = [&] { return std::move(reference(backend, c, scratch.b[A].data, scratch.b[B].data, scratch.b[C].data).ref); };
  draw(A, compute);
  draw(B, compute);
  if (reads_c0(c)) draw(C, Compute::f64);
  std::vector<std::vector<double>> refs;
  refs.push_back(ref());
  if (reads_c0(c) && converts(c.c_type, accumulator(compute))) {
    draw(C, accumulator(compute));
    refs.push_back(ref());
  }
  return refs;
}

}  // namespace assay::gemm
