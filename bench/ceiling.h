// The ceiling of issue #18: the least a differential case of one GEMM can
// cost on this GPU, in one process, one candidate call per case. Its case:
// fill A and B and poison C on the device, one candidate launch, the FP64
// reference and the |A||B| bound on the device, the comparison on the
// device, three numbers read back, one synchronize. It runs plain (each
// piece launched) and as a CUDA graph (the case captured once, replayed).
// assay_bench_speed prints assay's gate path as a ratio to it.
#pragma once
#include <cstdint>

#include "assay/abi.h"

struct cublasContext;

namespace assay::ceiling {

// Compact row-major f32 operands in device memory, C = A B (alpha 1, beta 0).
struct Gemm {
  float *a, *b, *c;
  int64_t m, n, k;
};

class Loop {
 public:
  // call: the candidate's call over exactly these buffers, on `stream`.
  Loop(const Gemm& g, assay_run_fn run, const assay_call* call, void* stream);
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  // One case launched piece by piece: true when the candidate's C passed.
  bool plain_case();
  // The same case as a graph captured on first use; false (and graphed()
  // false) when the candidate's launches cannot be captured.
  bool graph_case();
  bool graphed() const { return graph_ok_; }
  uint64_t cases() const;  // cases judged so far (the seed counter)

 private:
  void enqueue();
  bool judged();
  Gemm g_;
  assay_run_fn run_;
  const assay_call* call_;
  void* stream_;
  uint64_t* counter_ = nullptr;  // device: the case number (the fills' seed)
  double* stats_ = nullptr;      // device: bad elements, checked elements, largest error / allowed
  double* host_stats_ = nullptr; // pinned
  void* graph_ = nullptr;        // cudaGraphExec_t
  bool graph_tried_ = false, graph_ok_ = false;
};

// Seconds per FP64 reference at cuBLAS's rate: two DGEMMs (A B and
// |A||B|) of m x k by k x n on operands already in double, timed with
// events over `reps` repetitions after a warm-up.
double dgemm_reference_seconds(cublasContext* handle, void* stream, int64_t m, int64_t n, int64_t k, int reps);

}  // namespace assay::ceiling
