#include "ops/gemm/gemm_reference.h"

#include "backend/cuda/cuda_backend.h"
#include "ops/gemm/gemm_problem.h"
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

}  // namespace assay::gemm
