// window_bug: a naive f32 GEMM, correct except in a narrow window of shapes
// (m % 64 in 33..63, k % 32 >= 20 and n % 16 == 5), where it drops the last
// product of every dot product, as a kernel with a mis-specialised
// remainder path would. Field notes 2.1 (tail bugs), made rare on purpose:
// the gate's fixed sweep does not hit the window, so it measures whether
// fuzzing feedback steers toward it (`assay fuzz` with and without
// --no-features; scripts/bench-fuzz-feedback.sh).
#include <assay/abi.h>

#include <cstdint>

namespace {

float* at(const DLTensor& t, int64_t r, int64_t c) {
  int64_t rs = t.strides ? t.strides[0] : t.shape[1], cs = t.strides ? t.strides[1] : 1;
  return reinterpret_cast<float*>(static_cast<char*>(t.data) + t.byte_offset) + r * rs + c * cs;
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  const DLTensor &A = call->inputs[0], &B = call->inputs[1], &C = call->outputs[0];
  const int64_t m = C.shape[0], n = C.shape[1], k = A.shape[1];
  const double alpha = call->scalars[0], beta = call->scalars[1];
  const bool in_window = m % 64 >= 33 && k % 32 >= 20 && n % 16 == 5;
  const int64_t k_used = in_window ? k - 1 : k;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < k_used; ++p) acc += *at(A, i, p) * *at(B, p, j);
      float v = alpha == 0 ? 0.0f : float(alpha) * acc;
      if (beta != 0) v += float(beta) * *at(C, i, j);
      *at(C, i, j) = v;
    }
  return ASSAY_OK;
}
