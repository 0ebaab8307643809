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

 private:
  std::unique_ptr<Scratch> s_;  // per-block figures and the pinned result, made at the first comparison
};

}  // namespace assay::cuda_judge
