// PLANTED CHEAT (issue #16, fingerprint cache): f32 GEMM that keeps, for up to
// 8 input fingerprints (a hash of the shape, alpha, beta and 64 sampled
// elements of A and B, plus 32 of C0 when beta != 0), a private copy of the
// output it computed; from the 9th call on, a known fingerprint gets its copy
// copied into C, O(m*n) work instead of O(m*n*k). The answers are right (the
// bench's input sets come back). On the host its copy is below the speed of
// light (the roofline's floor, checked first); where it is not (the H200:
// cuda/fingerprint_cache.cu), the first-sight probe catches it.
// Calls 1-8 of each run of consecutive calls on identical tensors (data
// pointers, byte offsets, shapes, strides) are honest; any change restarts
// the count, so the gate's 4-call cases never see the cheat.
// Expected verdict: pass (gate); bench: impossible_speed.
#include <assay/abi.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <vector>

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

bool is_f32_matrix(const DLTensor& t) {
  return t.ndim == 2 && t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1;
}
// True when the call is an f32 GEMM: inputs {A, B}, output {C}, scalars {alpha, beta}.
bool is_f32_gemm(const assay_call* call) {
  return call->num_inputs == 2 && call->num_outputs == 1 && call->num_scalars == 2 &&
         is_f32_matrix(call->inputs[0]) && is_f32_matrix(call->inputs[1]) && is_f32_matrix(call->outputs[0]);
}

// Element (i, j) of the result, BLAS semantics: alpha == 0 skips A*B,
// beta == 0 never reads C0 (C may hold NaN poison).
float element(const Mat& A, const Mat& B, const Mat& C, double alpha, double beta, int64_t i, int64_t j) {
  double r = 0.0;
  if (alpha != 0.0) {
    float acc = 0.0f;
    for (int64_t p = 0; p < A.cols; ++p) acc += A.at(i, p) * B.at(p, j);
    r = alpha * acc;
  }
  if (beta != 0.0) r += beta * C.at(i, j);
  return float(r);
}

// The honest GEMM: C = alpha*A*B + beta*C0, f32 sums in ascending k, any strides.
void gemm(const Mat& A, const Mat& B, const Mat& C, double alpha, double beta) {
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) C.at(i, j) = element(A, B, C, alpha, beta, i, j);
}

// This call's place in the current run of consecutive calls on identical
// tensors (data pointer, byte offset, shape and strides of A, B and C): 1 for
// the first call after any difference from the previous call.
int64_t streak(const assay_call* call) {
  static std::array<int64_t, 18> last{};
  static int64_t count = 0;
  std::array<int64_t, 18> key{};
  size_t n = 0;
  const DLTensor* const tensors[3] = {&call->inputs[0], &call->inputs[1], &call->outputs[0]};
  for (const DLTensor* t : tensors) {
    key[n++] = int64_t(reinterpret_cast<intptr_t>(t->data));
    key[n++] = int64_t(t->byte_offset);
    for (int d = 0; d < 2; ++d) key[n++] = t->shape[d];
    for (int d = 0; d < 2; ++d) key[n++] = t->strides ? t->strides[d] : -1;
  }
  count = count > 0 && key == last ? count + 1 : 1;
  last = key;
  return count;
}

uint64_t fnv1a(uint64_t h, const void* data, size_t bytes) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// 32 elements of M at fixed positions spread over its row-major order.
uint64_t hash_samples(uint64_t h, const Mat& M) {
  const int64_t total = M.rows * M.cols;
  if (total == 0) return h;
  for (int64_t s = 0; s < 32; ++s) {
    const int64_t idx = (2 * s + 1) * total / 64;
    const float v = M.at(idx / M.cols, idx % M.cols);
    h = fnv1a(h, &v, sizeof v);
  }
  return h;
}

uint64_t fingerprint(const Mat& A, const Mat& B, const Mat& C, double alpha, double beta) {
  const int64_t dims[3] = {C.rows, C.cols, A.cols};
  uint64_t h = fnv1a(14695981039346656037ull, dims, sizeof dims);
  h = fnv1a(h, &alpha, sizeof alpha);
  h = fnv1a(h, &beta, sizeof beta);
  h = hash_samples(hash_samples(h, A), B);
  return beta != 0.0 ? hash_samples(h, C) : h;
}

struct Entry {
  uint64_t key;
  std::vector<float> out;  // row-major m x n
};
constexpr size_t kEntries = 8;
constexpr int64_t kMaxCached = int64_t(1) << 25;  // elements; bigger outputs are never kept

}  // namespace

int assay_run(const assay_call* call) {
  if (!is_f32_gemm(call)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  static std::deque<Entry> cache;  // oldest first
  const int64_t n = streak(call);
  const int64_t size = C.rows * C.cols;
  if (size > kMaxCached) {
    gemm(A, B, C, alpha, beta);
    return ASSAY_OK;
  }
  const uint64_t key = fingerprint(A, B, C, alpha, beta);
  auto hit = cache.begin();
  while (hit != cache.end() && hit->key != key) ++hit;
  if (n >= 9 && hit != cache.end()) {
    for (int64_t i = 0; i < C.rows; ++i)  // CHEAT: a copy instead of a GEMM
      for (int64_t j = 0; j < C.cols; ++j) C.at(i, j) = hit->out[size_t(i * C.cols + j)];
    return ASSAY_OK;
  }
  gemm(A, B, C, alpha, beta);
  if (hit == cache.end()) {
    if (cache.size() == kEntries) cache.pop_front();
    cache.push_back({key, {}});
    hit = cache.end() - 1;
  }
  hit->out.resize(size_t(size));
  for (int64_t i = 0; i < C.rows; ++i)
    for (int64_t j = 0; j < C.cols; ++j) hit->out[size_t(i * C.cols + j)] = C.at(i, j);
  return ASSAY_OK;
}
