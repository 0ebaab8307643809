// The comparison of an output with its reference on the device
// (judge/element_check.h's rules): two kernels judge every element where it
// lives and one download of a few hundred bytes brings back the counts, the
// maxima and the first bad elements. No m x n array crosses to the host.
#pragma once
#include <memory>

#include "core/tensor_geom.h"
#include "judge/element_check.h"

namespace assay::cuda_judge {

struct Scratch;
namespace detail {
struct Partial;
}

class Comparer {
 public:
  Comparer();
  ~Comparer();
  Comparer(const Comparer&) = delete;
  Comparer& operator=(const Comparer&) = delete;
  // Every pointer in device memory: out at the output's data start
  // (geometry g), ref, bound and terms (nullable) g.count() doubles
  // row-major, each class reference as many. Synchronizes `stream`.
  CompareStats compare(void* stream, const Tolerance& tol, const TensorGeom& g, const std::byte* out, const double* ref,
                       const double* bound, const double* terms, const ClassRefs& classes);
  // The same with each element's figures from `src` as the kernel reads
  // them (device_compare.cuh, which defines it: include that in a .cu).
  template <class Source>
  CompareStats compare_from(void* stream, const Tolerance& tol, const TensorGeom& g, const std::byte* out,
                            const Source& src, const ClassRefs& classes);

 private:
  friend detail::Partial* partials(Comparer&);
  // The blocks' figures merged, downloaded and unpacked.
  CompareStats finish(void* stream, int blocks, const TensorGeom& g);
  std::unique_ptr<Scratch> s_;  // per-block figures and the pinned result, made at the first comparison
};

}  // namespace assay::cuda_judge
