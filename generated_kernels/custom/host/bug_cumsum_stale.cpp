// PLANTED BUG (stale results, skipped work): cumsum that computes only on the
// first call of the process for each shape (rows, n), remembered in a static
// set; every later call with that shape returns ASSAY_OK at once and leaves y
// as it found it (the harness's poison). A checker that validates the first
// call and then only times, or whose output buffer still holds an earlier
// answer, accepts it.
// Expected verdict: stale_result (call 2 fails and its bad elements are exactly
// what y held before the call; a later case whose shape an earlier case already
// used fails in its call 1, where that reads unwritten_output).
#include <assay/abi.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <utility>

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
  static std::set<std::pair<int64_t, int64_t>> seen;
  if (!seen.insert({y.rows, y.cols}).second) return ASSAY_OK;  // BUG: shape seen before, skip the work
  for (int64_t r = 0; r < y.rows; ++r) {
    float s = 0.0f;
    for (int64_t j = 0; j < y.cols; ++j) {
      s += x.at(r, j);
      y.at(r, j) = s;
    }
  }
  return ASSAY_OK;
}
