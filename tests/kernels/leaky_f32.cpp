// A correct host kernel that leaks 64 MiB of host memory per call (touched,
// so it is resident) and takes 0.25 s: in process, tests/test_bounds.cpp
// checks that a campaign stops at its --host-memory-limit with its summary.
#include <assay/abi.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace {

struct Mat {
  char* base;
  int64_t rows, cols, rs, cs;
  explicit Mat(const DLTensor& t)
      : base(static_cast<char*>(t.data) + t.byte_offset), rows(t.shape[0]), cols(t.shape[1]),
        rs(t.strides ? t.strides[0] : t.shape[1]), cs(t.strides ? t.strides[1] : 1) {}
  float& at(int64_t r, int64_t c) const { return reinterpret_cast<float*>(base)[r * rs + c * cs]; }
};

std::vector<char*> kept;  // the leak, reachable so that the compiler keeps it

bool is_f32(const DLTensor& t) { return t.ndim == 2 && t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1; }

}  // namespace

int assay_run(const assay_call* call) {
  if (call->num_inputs != 2 || call->num_outputs != 1 || call->num_scalars != 2 || !is_f32(call->inputs[0]) ||
      !is_f32(call->inputs[1]) || !is_f32(call->outputs[0]))
    return ASSAY_UNSUPPORTED;
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
  const size_t leak = size_t(64) << 20;
  char* p = new char[leak];
  std::memset(p, 1, leak);
  kept.push_back(p);  // never freed, on purpose
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  return ASSAY_OK;
}
