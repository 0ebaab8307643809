// window_bug: a row-blocked f32 GEMM (blocks of 64 rows of C) whose last,
// partial block takes its own remainder path when it holds more than half a
// block (m % 64 in 33..63; a remainder of up to 32 rows runs as a half block
// through the main path). The remainder path stages each row of A in a fixed
// buffer of 2048 floats and runs its k loop over the staged part only, so for
// k > 2048 it drops every product past the 2048th. Every other shape is right,
// whatever n. Field notes 2.1 (tail bugs), made rare on purpose: the gate's
// sweep and random cases never pair such an m with k > 2048 (its long-k case
// has m = 96, a remainder of 32; its random k stays at or below 2048), so it
// measures whether fuzzing feedback steers toward it (`assay fuzz` with and
// without --no-features; scripts/bench-fuzz-feedback.sh).
// Expected verdict: mismatch.
#include <assay/abi.h>

#include <algorithm>
#include <cstdint>

namespace {

constexpr int64_t kBlock = 64;    // rows of C per block
constexpr int64_t kStage = 2048;  // floats of A staged per row on the remainder path

float* at(const DLTensor& t, int64_t r, int64_t c) {
  int64_t rs = t.strides ? t.strides[0] : t.shape[1], cs = t.strides ? t.strides[1] : 1;
  return reinterpret_cast<float*>(static_cast<char*>(t.data) + t.byte_offset) + r * rs + c * cs;
}

float epilogue(float acc, double alpha, double beta, const float* c0) {
  float v = alpha == 0 ? 0.0f : float(alpha) * acc;
  if (beta != 0) v += float(beta) * *c0;
  return v;
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  const DLTensor &A = call->inputs[0], &B = call->inputs[1], &C = call->outputs[0];
  const int64_t m = C.shape[0], n = C.shape[1], k = A.shape[1];
  const double alpha = call->scalars[0], beta = call->scalars[1];
  const int64_t remainder = m % kBlock;
  // Full blocks, and a remainder of at most half a block, on the main path.
  const int64_t main_rows = remainder > kBlock / 2 ? m - remainder : m;
  for (int64_t i = 0; i < main_rows; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += *at(A, i, p) * *at(B, p, j);
      *at(C, i, j) = epilogue(acc, alpha, beta, at(C, i, j));
    }
  // The wide remainder: each row of A staged once, then reused for every column.
  float stage[kStage];
  const int64_t staged = std::min(k, kStage);  // BUG: the k loop stops where the buffer does
  for (int64_t i = main_rows; i < m; ++i) {
    for (int64_t p = 0; p < staged; ++p) stage[p] = *at(A, i, p);
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < staged; ++p) acc += stage[p] * *at(B, p, j);
      *at(C, i, j) = epilogue(acc, alpha, beta, at(C, i, j));
    }
  }
  return ASSAY_OK;
}
