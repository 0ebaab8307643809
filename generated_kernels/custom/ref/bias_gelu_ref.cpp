// Reference of the custom op bias_gelu (specs cuda_bias_gelu*, host_bias_gelu*):
//   inputs {x [rows, n], bias [n]}, outputs {y [rows, n]}, no scalars;
//   y[r][j] = gelu(x[r][j] + bias[j]),  gelu(v) = 0.5 v (1 + erf(v / sqrt 2))  (the erf form).
// Called by the harness on FP64 host tensors holding the exactly widened inputs;
// any strides (NULL = compact row-major) and byte offsets. The arithmetic is in
// assay_real (assay/reference.h): double for the FP64 reference, the candidate's
// dtype for the same-precision build. The formula is taken literally, in this
// order ((0.5 v) (1 + erf(v / sqrt 2))): gelu(+Inf) = +Inf, gelu(-Inf) = NaN
// (-Inf * 0), NaN stays NaN, and 0.5 v before the factor 2 never overflows a
// finite v. A candidate has to follow these special values.
#include <assay/abi.h>
#include <assay/reference.h>

#include <cmath>
#include <cstdint>

namespace {

bool is_f64(const DLTensor& t, int ndim) {
  return t.ndim == ndim && t.dtype.code == kDLFloat && t.dtype.bits == 64 && t.dtype.lanes == 1;
}
// Element (r, c) of a 2-D FP64 tensor; NULL strides mean compact row-major.
double* at(const DLTensor& t, int64_t r, int64_t c) {
  const int64_t rs = t.strides ? t.strides[0] : t.shape[1], cs = t.strides ? t.strides[1] : 1;
  return reinterpret_cast<double*>(static_cast<char*>(t.data) + t.byte_offset) + r * rs + c * cs;
}
// Element i of a 1-D FP64 tensor.
double* at(const DLTensor& t, int64_t i) {
  return reinterpret_cast<double*>(static_cast<char*>(t.data) + t.byte_offset) + i * (t.strides ? t.strides[0] : 1);
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (call->abi_version != ASSAY_ABI_VERSION || call->num_inputs != 2 || call->num_outputs != 1 ||
      call->num_scalars != 0)
    return 2;
  const DLTensor &X = call->inputs[0], &B = call->inputs[1], &Y = call->outputs[0];
  if (!is_f64(X, 2) || !is_f64(B, 1) || !is_f64(Y, 2)) return 2;
  const int64_t rows = X.shape[0], n = X.shape[1];
  if (B.shape[0] != n || Y.shape[0] != rows || Y.shape[1] != n) return 2;

  using std::erf;
  using std::sqrt;
  const assay_real half(0.5), one(1), sqrt2 = sqrt(assay_real(2));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      const assay_real v = assay_real(*at(X, r, j)) + assay_real(*at(B, j));
      *at(Y, r, j) = double(half * v * (one + erf(v / sqrt2)));
    }
  return ASSAY_OK;
}
