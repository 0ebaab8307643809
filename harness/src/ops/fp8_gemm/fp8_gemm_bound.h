// The fp8_gemm error model's numbers and its floor per element, for the
// host and the device (C++17: nvcc compiles it).
#pragma once
#include <cstdint>

#include "core/hd.h"

namespace assay::fp8_gemm {

// The error model (fp8_gemm_tolerance.h): |d - ref| <= rel * (|A'||B'|)_ij
// + floor_ij, floor_ij from the rows' largest values (underflow of f32
// scale products and dequantized values below f32's normal range).
struct ErrorModel {
  double rel = 0;         // relative error of the accumulation, per unit of |A'||B'|
  double floor_unit = 0;  // the absolute error one f32 underflow costs (2^-149; flushed: 2^-125)
};

inline constexpr int64_t kFloorBlock = 128;  // the scale blocks' k extent (kScaleBlock)

// A kernel may round in f32 the scales' product (sa sb), a block's partial
// sum times one scale and then the other, or each dequantized value (a sa,
// b sb) and their product; each of these below f32's normal range loses up
// to floor_unit, once per block or per product. In the rows' largest
// values: (k + 127) (1 + |a||b| + |sa| + |sb| + |a||sa| + |b||sb|).
ASSAY_HD double floor_of(const ErrorModel& e, int64_t k, double a, double sa, double b, double sb) {
  return e.floor_unit * double(k + kFloorBlock - 1) * (1 + a * b + sa + sb + a * sa + b * sb);
}

}  // namespace assay::fp8_gemm
