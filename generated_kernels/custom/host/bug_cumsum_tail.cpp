// PLANTED BUG (tail chunk dropped): cumsum that works in chunks of 256
// elements and stores a chunk only when it is whole: when n % 256 != 0 the last
// n % 256 elements of every row are never written (all of them for n < 256)
// and keep the harness's output poison.
// Expected verdict: unwritten_output.
#include <assay/abi.h>

#include <cstdint>
#include <cstring>

namespace {

// A 2-D DLTensor: element (r, c) lives at data + byte_offset + (r*rs + c*cs) elements.
struct Mat {
  char* base;
  int64_t rows, cols, rs, cs;
  explicit Mat(const DLTensor& t)
      : base(static_cast<char*>(t.data) + t.byte_offset), rows(t.shape[0]), cols(t.shape[1]),
        rs(t.strides ? t.strides[0] : t.shape[1]), cs(t.strides ? t.strides[1] : 1) {}
  float& at(int64_t r, int64_t c) const { return reinterpret_cast<float*>(base)[r * rs + c * cs]; }
};

bool is_f32(const DLTensor& t) {
  return t.ndim == 2 && t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1;
}
// True when the call is cumsum in f32: inputs {x [rows, n]}, outputs {y [rows, n]}.
bool cumsum_of(const assay_call* call) {
  if (std::strcmp(call->op, "custom") != 0 || call->num_inputs != 1 || call->num_outputs != 1 ||
      call->num_scalars != 0)
    return false;
  const DLTensor &x = call->inputs[0], &y = call->outputs[0];
  return is_f32(x) && is_f32(y) && y.shape[0] == x.shape[0] && y.shape[1] == x.shape[1];
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (!cumsum_of(call)) return ASSAY_UNSUPPORTED;
  const Mat x(call->inputs[0]), y(call->outputs[0]);
  for (int64_t r = 0; r < y.rows; ++r) {
    const int64_t stored = y.cols / 256 * 256;  // BUG: only whole 256-element chunks are stored
    float s = 0.0f;
    for (int64_t j = 0; j < y.cols; ++j) {
      s += x.at(r, j);
      if (j < stored) y.at(r, j) = s;
    }
  }
  return ASSAY_OK;
}
