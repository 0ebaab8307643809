// A host kernel that is wrong once and then hangs: its first call with
// k >= 7 returns C[0,0] off by 1000 (a mismatch), and every call after that
// sleeps 30 s. In process, the shrink of that failure cannot be stopped:
// tests/test_bounds.cpp checks that the campaign's watchdog still ends on
// time and keeps the failure, unshrunk.
#include <assay/abi.h>

#include <chrono>
#include <cstdint>
#include <thread>

namespace {

struct Mat {
  char* base;
  int64_t rows, cols, rs, cs;
  explicit Mat(const DLTensor& t)
      : base(static_cast<char*>(t.data) + t.byte_offset), rows(t.shape[0]), cols(t.shape[1]),
        rs(t.strides ? t.strides[0] : t.shape[1]), cs(t.strides ? t.strides[1] : 1) {}
  float& at(int64_t r, int64_t c) const { return reinterpret_cast<float*>(base)[r * rs + c * cs]; }
};

bool is_f32(const DLTensor& t) { return t.ndim == 2 && t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1; }

bool failed = false;  // one wrong answer, then only slow ones

}  // namespace

int assay_run(const assay_call* call) {
  if (call->num_inputs != 2 || call->num_outputs != 1 || call->num_scalars != 2 || !is_f32(call->inputs[0]) ||
      !is_f32(call->inputs[1]) || !is_f32(call->outputs[0]))
    return ASSAY_UNSUPPORTED;
  if (failed) std::this_thread::sleep_for(std::chrono::seconds(30));
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) {
      float acc = 0;
      for (int64_t p = 0; p < A.cols; ++p) acc += A.at(i, p) * B.at(p, j);
      double r = alpha == 0.0 ? 0.0 : alpha * acc;  // BLAS: alpha = 0 skips A*B, beta = 0 never reads C
      if (beta != 0.0) r += beta * C.at(i, j);
      C.at(i, j) = float(r);
    }
  if (!failed && A.cols >= 7 && C.rows > 0 && C.cols > 0) failed = true, C.at(0, 0) += 1000.0f;
  return ASSAY_OK;
}
