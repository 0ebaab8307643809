// Reference of the custom op cumsum (specs cuda_cumsum*, host_cumsum*), the
// row-wise inclusive prefix sum:
//   inputs {x [rows, n]}, outputs {y [rows, n]}, no scalars;
//   y[r][j] = sum of x[r][i] for i = 0..j.
// Called by the harness on FP64 host tensors holding the exactly widened inputs;
// any strides (NULL = compact row-major) and byte offsets. Sequential sums in
// assay_real (assay/reference.h): double for the FP64 reference, the
// candidate's dtype for the same-precision build (a sequential f32 sum there).
#include <assay/abi.h>
#include <assay/reference.h>

#include <cstdint>

namespace {

bool is_f64(const DLTensor& t) {
  return t.ndim == 2 && t.dtype.code == kDLFloat && t.dtype.bits == 64 && t.dtype.lanes == 1;
}
// Element (r, c) of a 2-D FP64 tensor; NULL strides mean compact row-major.
double* at(const DLTensor& t, int64_t r, int64_t c) {
  const int64_t rs = t.strides ? t.strides[0] : t.shape[1], cs = t.strides ? t.strides[1] : 1;
  return reinterpret_cast<double*>(static_cast<char*>(t.data) + t.byte_offset) + r * rs + c * cs;
}

}  // namespace

extern "C" int assay_run(const assay_call* call) {
  if (call->abi_version != ASSAY_ABI_VERSION || call->num_inputs != 1 || call->num_outputs != 1 ||
      call->num_scalars != 0)
    return 2;
  const DLTensor &X = call->inputs[0], &Y = call->outputs[0];
  if (!is_f64(X) || !is_f64(Y)) return 2;
  const int64_t rows = X.shape[0], n = X.shape[1];
  if (Y.shape[0] != rows || Y.shape[1] != n) return 2;

  for (int64_t r = 0; r < rows; ++r) {
    assay_real s(0);
    for (int64_t j = 0; j < n; ++j) {
      s += assay_real(*at(X, r, j));
      *at(Y, r, j) = double(s);
    }
  }
  return ASSAY_OK;
}
