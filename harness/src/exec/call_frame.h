// The assay_call of one case: DLTensor views of its tensors over the buffers
// that hold them (inputs first, then outputs), the scalars, the backend's
// stream. It owns the shape and stride arrays the views point into, so it
// must outlive the call. The executor and the speed benchmark build their
// calls here, so both hand a candidate exactly the same thing.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "assay/abi.h"
#include "backend/backend.h"
#include "case/case.h"
#include "core/tensor_geom.h"

namespace assay {

// The DLPack dtype of t (FP8: DLPack 1.x's codes, assay/abi.h).
inline DLDataType dl_dtype(DType t) {
  const uint8_t code = is_integer(t)          ? kDLInt
                       : t == DType::bf16     ? kDLBfloat
                       : t == DType::e4m3     ? ASSAY_DL_FLOAT8_E4M3FN
                       : t == DType::e5m2     ? ASSAY_DL_FLOAT8_E5M2
                                              : kDLFloat;
  return DLDataType{code, uint8_t(dtype_bytes(t) * 8), 1};
}

struct CallFrame {
  struct Dims {
    int64_t shape[TensorGeom::kMaxDims], strides[TensorGeom::kMaxDims];
  };
  std::string op;
  std::vector<Dims> dims;
  std::vector<DLTensor> views;  // inputs, then outputs
  std::vector<double> scalars;
  assay_call call{};

  // data[i]: where tensor i's buffer data starts (its geometry's offset, in
  // elements, becomes the DLTensor's byte_offset). num_inputs: how many of
  // the tensors come first as inputs.
  CallFrame(Backend& be, std::string_view op_name, std::span<const TensorGeom> g, std::span<std::byte* const> data,
            int num_inputs, std::span<const double> scalar_values)
      : op(op_name), dims(g.size()), views(g.size()), scalars(scalar_values.begin(), scalar_values.end()) {
    for (size_t i = 0; i < g.size(); ++i) {
      for (int d = 0; d < g[i].ndim; ++d) dims[i].shape[d] = g[i].shape[d], dims[i].strides[d] = g[i].strides[d];
      views[i] = DLTensor{data[i], be.device(), g[i].ndim, dl_dtype(g[i].dtype), dims[i].shape, dims[i].strides,
                          uint64_t(g[i].offset) * dtype_bytes(g[i].dtype)};
    }
    call = assay_call{ASSAY_ABI_VERSION, op.c_str(),
                      num_inputs, views.data(),
                      int32_t(g.size()) - num_inputs, views.data() + num_inputs,
                      int32_t(scalars.size()), scalars.data(),
                      be.stream(), nullptr, 0};
  }
  // The frame of case c over `data` (one pointer per tensor).
  CallFrame(Backend& be, const Case& c, std::span<std::byte* const> data)
      : CallFrame(be, c.op, geoms(c), data, c.num_inputs(), scalar_values(c)) {}
  CallFrame(const CallFrame&) = delete;  // the views point into this object
  CallFrame& operator=(const CallFrame&) = delete;

  static std::vector<TensorGeom> geoms(const Case& c) {
    std::vector<TensorGeom> g;
    for (auto& t : c.tensors) g.push_back(t.geom());
    return g;
  }
  static std::vector<double> scalar_values(const Case& c) {
    std::vector<double> v;
    for (auto& s : c.scalars) v.push_back(s.value);
    return v;
  }
};

}  // namespace assay
