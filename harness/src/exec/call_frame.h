// The assay_call of one GEMM case: DLTensor views of A, B and C over the
// buffers that hold them, the scalars, the backend's stream. It owns the
// shape and stride arrays the views point into, so it must outlive the call.
// The executor and the speed benchmark build their calls here, so both hand
// a candidate exactly the same thing.
#pragma once
#include <array>

#include "assay/abi.h"
#include "backend/backend.h"
#include "core/tensor_geom.h"

namespace assay {

struct GemmCallFrame {
  int64_t shapes[3][2], strides[3][2];
  DLTensor inputs[2], outputs[1];
  double scalars[2];
  assay_call call{};

  // data[i]: where tensor i's buffer data starts (its geometry's offset, in
  // elements, becomes the DLTensor's byte_offset).
  GemmCallFrame(Backend& be, const std::array<TensorGeom, 3>& g, std::byte* const data[3], double alpha,
                double beta) {
    DLTensor* views[3] = {&inputs[0], &inputs[1], &outputs[0]};
    for (int i = 0; i < 3; ++i) {
      shapes[i][0] = g[i].rows, shapes[i][1] = g[i].cols;
      strides[i][0] = g[i].row_stride, strides[i][1] = g[i].col_stride;
      const bool bf16 = g[i].dtype == DType::bf16;
      *views[i] = DLTensor{data[i], be.device(), 2,
                           DLDataType{uint8_t(bf16 ? kDLBfloat : kDLFloat), uint8_t(dtype_bytes(g[i].dtype) * 8), 1},
                           shapes[i], strides[i], uint64_t(g[i].offset) * dtype_bytes(g[i].dtype)};
    }
    scalars[0] = alpha, scalars[1] = beta;
    call = assay_call{ASSAY_ABI_VERSION, "gemm", 2, inputs, 1, outputs, 2, scalars, be.stream(), nullptr, 0};
  }
  GemmCallFrame(const GemmCallFrame&) = delete;  // the views point into this object
  GemmCallFrame& operator=(const GemmCallFrame&) = delete;
};

}  // namespace assay
