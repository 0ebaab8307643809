// PLANTED BUG (strides ignored): bias_gelu that reads x as compact row-major
// (row stride n) whatever its strides say; the byte offset, bias and y are
// handled right. With padded rows of x, rows after the first read the wrong
// elements and the padding (the harness's canary, -1e10, which gives -0).
// Expected verdict: mismatch.
#include <assay/abi.h>

#include <cmath>
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
// A 1-D DLTensor: element i lives at data + byte_offset + i*stride elements.
struct Vec {
  char* base;
  int64_t len, stride;
  explicit Vec(const DLTensor& t)
      : base(static_cast<char*>(t.data) + t.byte_offset), len(t.shape[0]), stride(t.strides ? t.strides[0] : 1) {}
  float& at(int64_t i) const { return reinterpret_cast<float*>(base)[i * stride]; }
};

bool is_f32(const DLTensor& t, int ndim) {
  return t.ndim == ndim && t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1;
}
// True when the call is bias_gelu in f32: inputs {x [rows, n], bias [n]}, outputs {y [rows, n]}.
bool bias_gelu_of(const assay_call* call) {
  if (std::strcmp(call->op, "custom") != 0 || call->num_inputs != 2 || call->num_outputs != 1 ||
      call->num_scalars != 0)
    return false;
  const DLTensor &x = call->inputs[0], &b = call->inputs[1], &y = call->outputs[0];
  return is_f32(x, 2) && is_f32(b, 1) && is_f32(y, 2) && b.shape[0] == x.shape[1] && y.shape[0] == x.shape[0] &&
         y.shape[1] == x.shape[1];
}

float gelu(float v) {
  const float kSqrt2 = 1.41421356f;  // sqrtf(2), correctly rounded
  return 0.5f * v * (1.0f + std::erf(v / kSqrt2));
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (!bias_gelu_of(call)) return ASSAY_UNSUPPORTED;
  Mat x(call->inputs[0]);
  const Mat y(call->outputs[0]);
  x.rs = x.cols, x.cs = 1;  // BUG: x assumed compact row-major
  const Vec bias(call->inputs[1]);
  for (int64_t r = 0; r < y.rows; ++r)
    for (int64_t j = 0; j < y.cols; ++j) y.at(r, j) = gelu(x.at(r, j) + bias.at(j));
  return ASSAY_OK;
}
