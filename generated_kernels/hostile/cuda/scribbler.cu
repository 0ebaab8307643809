// HOSTILE (a candidate that attacks the checker's memory): the host-side
// launcher of a correct naive f32 GEMM kernel that first writes up to 1 MiB of
// random garbage over its own process's host memory (around and after a heap
// block of its own, random windows of the brk heap and of private anonymous
// mappings, and every shared-memory (memfd) buffer other than its tensors'),
// then enqueues the kernel on the call's stream. It first waits for the
// stream, so the harness's input fills are done before it starts; it spares
// pointers, sizes and text, so the process usually lives on. A checker that
// calls candidates in its own process keeps its host-side snapshots, expected
// values, tolerances and scalars in that memory, so its verdicts can no longer
// be trusted. Out of process (issue #3) only the worker's memory is hit and
// the kernel must pass; a worker that does die of it would be a crash, not a
// wrong verdict. Expected verdict: pass.
#include <assay/abi.h>
#include <cuda_runtime.h>
#include <pthread.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace {

// A 2-D DLTensor in device memory: element (r, c) lives at base + (r*rs + c*cs) elements.
struct Mat {
  char* base;
  int64_t rows, cols, rs, cs;
  template <class T> __device__ T& at(int64_t r, int64_t c) const { return reinterpret_cast<T*>(base)[r * rs + c * cs]; }
};
Mat view(const DLTensor& t) {
  return {static_cast<char*>(t.data) + t.byte_offset, t.shape[0], t.shape[1], t.strides ? t.strides[0] : t.shape[1],
          t.strides ? t.strides[1] : 1};
}

bool same(const DLTensor& t, DLDataType d) {
  return t.ndim == 2 && t.dtype.code == d.code && t.dtype.bits == d.bits && t.dtype.lanes == 1;
}
// True when the call is a GEMM with A and B of type `in` and C of type `out`.
bool gemm_of(const assay_call* call, DLDataType in, DLDataType out) {
  return call->num_inputs == 2 && call->num_outputs == 1 && call->num_scalars == 2 &&
         same(call->inputs[0], in) && same(call->inputs[1], in) && same(call->outputs[0], out);
}

// A 2-D grid of `block`s over rows x cols, each dimension capped at 65535 blocks;
// the kernels stride over whatever the grid does not cover.
dim3 grid_for(int64_t rows, int64_t cols, dim3 block) {
  auto cap = [](int64_t len, unsigned b) { return unsigned(std::min<int64_t>((len + b - 1) / b, 65535)); };
  return dim3(cap(cols, block.x), cap(rows, block.y));
}

// The epilogue, BLAS semantics: alpha == 0 skips A*B (0*Inf is not NaN there),
// beta == 0 never reads C0 (C may hold NaN poison).
__device__ double combine(double ab, double alpha, double beta, const float& c0) {
  double r = alpha == 0.0 ? 0.0 : alpha * ab;
  if (beta != 0.0) r += beta * c0;
  return r;
}

// Correct naive GEMM, one thread per element of C (grid-stride in both dimensions), f32 accumulation.
__global__ void gemm_naive(Mat A, Mat B, Mat C, double alpha, double beta) {
  for (int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; i < C.rows; i += int64_t(gridDim.y) * blockDim.y)
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < C.cols; j += int64_t(gridDim.x) * blockDim.x) {
      float acc = 0.0f;
      for (int64_t p = 0; p < A.cols; ++p) acc += A.at<float>(i, p) * B.at<float>(p, j);
      C.at<float>(i, j) = float(combine(acc, alpha, beta, C.at<float>(i, j)));
    }
}

// Enqueues gemm_naive on `stream`; ASSAY_OK, or 2 when the launch failed.
int launch_naive(const assay_call* call, cudaStream_t stream) {
  const Mat A = view(call->inputs[0]), B = view(call->inputs[1]), C = view(call->outputs[0]);
  if (C.rows == 0 || C.cols == 0) return ASSAY_OK;
  const dim3 block(32, 8), grid = grid_for(C.rows, C.cols, block);
  gemm_naive<<<grid, block, 0, stream>>>(A, B, C, call->scalars[0], call->scalars[1]);
  return cudaGetLastError() == cudaSuccess ? ASSAY_OK : 2;
}

// ---- the scribble ---------------------------------------------------------
// Writes up to kBudget bytes of random garbage over this process's own memory:
// the brk heap ([heap]), private anonymous mappings (malloc's mmap chunks and
// arenas) and memfd mappings (shared memory buffers, "/memfd:..." in
// /proc/self/maps) other than those that hold the call's tensors. To let the
// process usually survive, and to keep its own result right, it leaves alone
// - the call's own tensors (with a 64 KiB margin) and the whole mappings that
//   hold them, memfds named after CUDA or NVIDIA, and every other file-backed
//   or shared mapping (device files),
// - stacks: [stack], this thread's stack, and any rw mapping right after a
//   PROT_NONE guard (a thread's stack),
// - .bss (an anonymous mapping right after a file's mapping) and this thread's
//   TLS and thread control block (stack guard, pointer guard),
// and it only overwrites 8-byte words that look like floating-point data (a
// double of magnitude 2^-60..2^60, or two floats of magnitude 2^-40..2^40 or
// zero, and not 8 characters of text): never a pointer, a size, a small or
// negative integer, a timestamp or a string, so allocator metadata and data
// structures stay intact. It is still a scribbler: any float or double this
// process keeps (copies of inputs, expected values, tolerances, scalars) can
// change. It may, rarely, still kill the process.

constexpr uint64_t kBudget = uint64_t(1) << 20;    // bytes of garbage per call, at most
constexpr uint64_t kScanLimit = uint64_t(16) << 20;  // bytes examined per call, at most
constexpr uint64_t kMargin = 64 << 10;

struct Range {
  uintptr_t lo = 0, hi = 0;
  bool has(uintptr_t a) const { return a >= lo && a < hi; }
};

uint64_t next_random(uint64_t& s) {  // xorshift64*
  s ^= s >> 12;
  s ^= s << 25;
  s ^= s >> 27;
  return s * 0x2545F4914F6CDD1DULL;
}

bool float_like(uint32_t h) {
  const unsigned e = (h >> 23) & 0xff;
  return h == 0 || (e >= 127 - 40 && e <= 127 + 40);
}
bool looks_like_text(uint64_t w) {  // 8 bytes, each printable ASCII or NUL
  for (int i = 0; i < 8; ++i, w >>= 8)
    if ((w & 0xff) != 0 && ((w & 0xff) < 0x20 || (w & 0xff) > 0x7e)) return false;
  return true;
}
bool looks_like_data(uint64_t w) {
  if (looks_like_text(w)) return false;
  const unsigned e = unsigned(w >> 52) & 0x7ff;
  if (e >= 1023 - 60 && e <= 1023 + 60) return true;                   // a double
  return w != 0 && float_like(uint32_t(w)) && float_like(uint32_t(w >> 32));  // two floats
}

// The bytes a tensor's elements span, widened by kMargin on both sides.
Range span_of(const DLTensor& t) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(t.data);
  const uint64_t elem = (uint64_t(t.dtype.bits) * t.dtype.lanes + 7) / 8;
  uint64_t last = 0, compact = 1;  // offset of the last element from the first, in elements
  bool empty = false;
  for (int d = t.ndim - 1; d >= 0; --d) {
    const int64_t extent = t.shape[d], stride = t.strides ? t.strides[d] : int64_t(compact);
    if (extent <= 0) empty = true;
    else last += uint64_t(extent - 1) * uint64_t(stride < 0 ? -stride : stride);
    compact *= uint64_t(extent > 0 ? extent : 0);
  }
  const uint64_t bytes = t.byte_offset + (empty ? 0 : (last + 1) * elem);
  return {base > kMargin ? base - kMargin : 0, base + bytes + kMargin};
}

struct Targets {
  static constexpr int kMax = 4096;
  Range maps[kMax];  // the mappings it may write to
  int count = 0;
  Range keep[8];     // never written, even inside those mappings
  int keep_count = 0;
  bool kept(uintptr_t a) const {
    for (int i = 0; i < keep_count; ++i)
      if (keep[i].has(a)) return true;
    return false;
  }
  bool overlaps_kept(uintptr_t lo, uintptr_t hi) const {
    for (int i = 0; i < keep_count; ++i)
      if (keep[i].lo < hi && lo < keep[i].hi) return true;
    return false;
  }
};

thread_local int t_tls_probe = 0;

// Fills `t.maps` from /proc/self/maps; false when it cannot be read.
bool find_targets(Targets& t) {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (!f) return false;
  const uintptr_t own_stack = reinterpret_cast<uintptr_t>(&t), tcb = uintptr_t(pthread_self()),
                  tls = reinterpret_cast<uintptr_t>(&t_tls_probe);
  char line[4096];
  uintptr_t prev_hi = 0;
  bool prev_guard = false, prev_file = false;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &path_at) < 3) continue;
    const char* path = path_at > 0 ? line + path_at : "";
    while (*path == ' ') ++path;
    const bool anonymous = *path == '\0' || *path == '\n', heap = std::strncmp(path, "[heap]", 6) == 0;
    const bool adjacent = lo == prev_hi;
    const bool memfd = std::strncmp(path, "/memfd:", 7) == 0 &&  // another buffer's shared memory,
                       !std::strstr(path, "cuda") && !std::strstr(path, "nvidia");  // not the driver's
    const bool ok = ((std::strcmp(perms, "rw-p") == 0 && (heap || anonymous) &&
                      !(adjacent && (prev_guard || prev_file))) ||  // not a thread's stack, not .bss
                     (std::strcmp(perms, "rw-s") == 0 && memfd && !t.overlaps_kept(lo, hi))) &&
                    !Range{lo, hi}.has(own_stack) && !Range{lo, hi}.has(tcb) && !Range{lo, hi}.has(tls);
    if (ok && t.count < Targets::kMax) t.maps[t.count++] = Range{lo, hi};
    prev_hi = hi;
    prev_guard = perms[0] == '-' && perms[1] == '-' && perms[2] == '-';
    prev_file = !anonymous && path[0] != '[';
  }
  std::fclose(f);
  return true;
}

// Overwrites data-looking words in [lo, hi) with garbage until the budget or
// the scan limit runs out.
void scribble_range(const Targets& t, uintptr_t lo, uintptr_t hi, uint64_t& rng, uint64_t& written,
                    uint64_t& scanned) {
  lo = (lo + 7) & ~uintptr_t(7);
  for (uintptr_t a = lo; a + 8 <= hi && written < kBudget && scanned < kScanLimit; a += 8, scanned += 8) {
    volatile uint64_t* w = reinterpret_cast<volatile uint64_t*>(a);
    if (t.kept(a) || !looks_like_data(*w)) continue;
    *w = next_random(rng);
    written += 8;
  }
}

Targets g_targets;  // static: large, and in .bss, which the scribble skips

// Scribbles over this process's heap; returns the bytes written.
uint64_t scribble(const assay_call* call) {
  static uint64_t calls = 0;
  uint64_t rng = 0x9E3779B97F4A7C15ULL ^ uint64_t(std::time(nullptr)) ^ (++calls << 32) ^
                 reinterpret_cast<uintptr_t>(call);
  Targets& t = g_targets;
  t.count = t.keep_count = 0;
  for (int i = 0; i < call->num_inputs && t.keep_count < 8; ++i) t.keep[t.keep_count++] = span_of(call->inputs[i]);
  for (int i = 0; i < call->num_outputs && t.keep_count < 8; ++i) t.keep[t.keep_count++] = span_of(call->outputs[i]);
  char* block = static_cast<char*>(std::malloc(256));
  if (!find_targets(t) || !block) {
    std::free(block);
    return 0;
  }
  uint64_t written = 0, scanned = 0;
  // 1. Around and after a block of its own: 64 KiB before it to 1 MiB after it,
  //    within the block's mapping (normally the brk heap, next to everyone
  //    else's small allocations).
  const uintptr_t b = reinterpret_cast<uintptr_t>(block);
  for (int i = 0; i < t.count; ++i)
    if (t.maps[i].has(b))
      scribble_range(t, std::max(t.maps[i].lo, b > kMargin ? b - kMargin : 0),
                     std::min(t.maps[i].hi, b + (uintptr_t(1) << 20)), rng, written, scanned);
  // 2. Random 64 KiB windows of random eligible mappings.
  for (int tries = 0; tries < 256 && t.count > 0 && written < kBudget && scanned < kScanLimit; ++tries) {
    const Range& m = t.maps[next_random(rng) % uint64_t(t.count)];
    const uintptr_t size = m.hi - m.lo, window = std::min<uintptr_t>(size, 64 << 10);
    const uintptr_t lo = m.lo + ((next_random(rng) % (size - window + 1)) & ~uintptr_t(7));
    scribble_range(t, lo, lo + window, rng, written, scanned);
  }
  std::free(block);
  return written;
}

}  // namespace

int assay_run(const assay_call* call) {
  const DLDataType f32{kDLFloat, 32, 1};
  if (!gemm_of(call, f32, f32)) return ASSAY_UNSUPPORTED;
  const auto stream = static_cast<cudaStream_t>(call->stream);
  if (cudaStreamSynchronize(stream) != cudaSuccess) return 2;  // the inputs are in place
  scribble(call);  // HOSTILE: garbage over the process's own host memory
  return launch_naive(call, stream);
}
