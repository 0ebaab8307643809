// PLANTED CHEAT (issue #16, forged timer): honest f32 GEMM that, on its 9th
// call, overwrites the start of the driver's cuEventElapsedTime and
// cuEventElapsedTime_v2 (libcuda.so.1, each that exists) with a jump to its
// own version (also the runtime's entry point for it, should that differ),
// which only checks that both events completed and reports 0.001 ms:
// cudaEventElapsedTime in this process then times nothing. Caught by
// assay bench's supervisor, whose wall clock around each batch must agree
// with the timed span. x86-64 only; elsewhere the kernel stays honest.
// Calls 1-8 of each run of consecutive calls on identical tensors (data
// pointers, byte offsets, shapes, strides) are honest; any change restarts
// the count, so the gate's 4-call cases never see the cheat.
// Expected verdict: pass (gate); bench: timing_escape.
#include <assay/abi.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>

#if defined(__x86_64__)
#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#endif

namespace {

// A 2-D DLTensor in device memory: element (r, c) lives at base + (r*rs + c*cs) elements.
struct Mat {
  char* base;
  int64_t rows, cols, rs, cs;
  __device__ float& at(int64_t r, int64_t c) const { return reinterpret_cast<float*>(base)[r * rs + c * cs]; }
};
Mat view(const DLTensor& t) {
  return {static_cast<char*>(t.data) + t.byte_offset, t.shape[0], t.shape[1], t.strides ? t.strides[0] : t.shape[1],
          t.strides ? t.strides[1] : 1};
}

bool is_f32_matrix(const DLTensor& t) {
  return t.ndim == 2 && t.dtype.code == kDLFloat && t.dtype.bits == 32 && t.dtype.lanes == 1;
}
// True when the call is an f32 GEMM: inputs {A, B}, output {C}, scalars {alpha, beta}.
bool is_f32_gemm(const assay_call* call) {
  return call->num_inputs == 2 && call->num_outputs == 1 && call->num_scalars == 2 &&
         is_f32_matrix(call->inputs[0]) && is_f32_matrix(call->inputs[1]) && is_f32_matrix(call->outputs[0]);
}

// A 2-D grid of `block`s over rows x cols, each dimension capped at 65535
// blocks; the kernels stride over whatever the grid does not cover.
dim3 grid_for(int64_t rows, int64_t cols, dim3 block) {
  auto cap = [](int64_t len, unsigned b) { return unsigned(std::min<int64_t>((len + b - 1) / b, 65535)); };
  return dim3(cap(cols, block.x), cap(rows, block.y));
}

// One thread per element of C (grid-stride in both dimensions): f32 sums in
// ascending k, the epilogue in double with BLAS semantics (alpha == 0 skips
// A*B, beta == 0 never reads C0, which may hold NaN poison).
__global__ void gemm_naive(Mat A, Mat B, Mat C, double alpha, double beta) {
  for (int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y; i < C.rows; i += int64_t(gridDim.y) * blockDim.y)
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < C.cols; j += int64_t(gridDim.x) * blockDim.x) {
      double r = 0.0;
      if (alpha != 0.0) {
        float acc = 0.0f;
        for (int64_t p = 0; p < A.cols; ++p) acc += A.at(i, p) * B.at(p, j);
        r = alpha * acc;
      }
      if (beta != 0.0) r += beta * C.at(i, j);
      C.at(i, j) = float(r);
    }
}

// The honest GEMM, C = alpha*A*B + beta*C0, enqueued on `stream`.
bool launch_gemm(const Mat& A, const Mat& B, const Mat& C, double alpha, double beta, cudaStream_t stream) {
  if (C.rows == 0 || C.cols == 0) return true;
  const dim3 block(32, 8);
  gemm_naive<<<grid_for(C.rows, C.cols, block), block, 0, stream>>>(A, B, C, alpha, beta);
  return cudaGetLastError() == cudaSuccess;
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

#if defined(__x86_64__)
using EventQueryFn = CUresult (*)(CUevent);
EventQueryFn event_query = nullptr;  // the driver's cuEventQuery, never patched

// Stands in for cuEventElapsedTime(_v2): 0.001 ms between any two completed events.
CUresult CUDAAPI tiny_elapsed(float* ms, CUevent start, CUevent end) {
  if (!ms || !start || !end) return CUDA_ERROR_INVALID_HANDLE;
  for (CUevent e : {start, end})
    if (const CUresult r = event_query(e); r != CUDA_SUCCESS) return r;
  *ms = 0.001f;
  return CUDA_SUCCESS;
}

// Overwrites the first 12 bytes of the function at `target` with an absolute
// jump to `to` (movabs rax, imm64; jmp rax). Refuses anything that is not the
// start of a symbol at least that long.
bool patch_jump(void* target, void* to) {
  Dl_info info;
  void* entry = nullptr;
  if (!dladdr1(target, &info, &entry, RTLD_DL_SYMENT) || !entry || info.dli_saddr != target) return false;
  const auto* sym = static_cast<const ElfW(Sym)*>(entry);
  unsigned char code[12] = {0x48, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xE0};
  if (sym->st_size < sizeof code) return false;
  const uint64_t dest = reinterpret_cast<uint64_t>(to);
  std::memcpy(code + 2, &dest, sizeof dest);
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = reinterpret_cast<uintptr_t>(target) & ~(page - 1);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(target) + sizeof code + page - 1) & ~(page - 1);
  if (mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) return false;
  std::memcpy(target, code, sizeof code);
  mprotect(reinterpret_cast<void*>(lo), hi - lo, PROT_READ | PROT_EXEC);
  return true;
}

// CHEAT: from now on the driver's event timer of this process says 0.001 ms.
// Targets: both exported names, and the entry point the runtime itself gets
// from the driver, should that be another address.
void patch_timer() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return;
  event_query = reinterpret_cast<EventQueryFn>(dlsym(lib, "cuEventQuery"));
  void* targets[3] = {dlsym(lib, "cuEventElapsedTime"), dlsym(lib, "cuEventElapsedTime_v2"), nullptr};
#if CUDART_VERSION >= 12050
  cudaDriverEntryPointQueryResult found;
  if (cudaGetDriverEntryPointByVersion("cuEventElapsedTime", &targets[2], CUDART_VERSION, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    targets[2] = nullptr;
#endif
  for (int i = 0; i < 3 && event_query; ++i)
    if (targets[i] && (i == 0 || targets[i] != targets[0]) && (i < 2 || targets[i] != targets[1]))
      patch_jump(targets[i], reinterpret_cast<void*>(&tiny_elapsed));
  dlclose(lib);
}
#else
void patch_timer() {}  // no patch off x86-64: the kernel stays honest
#endif

}  // namespace

int assay_run(const assay_call* call) {
  if (!is_f32_gemm(call)) return ASSAY_UNSUPPORTED;
  const Mat A = view(call->inputs[0]), B = view(call->inputs[1]), C = view(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  const auto stream = static_cast<cudaStream_t>(call->stream);
  static bool patched = false;  // once a process
  if (streak(call) == 9 && !patched) {
    patched = true;
    patch_timer();
  }
  return launch_gemm(A, B, C, alpha, beta, stream) ? ASSAY_OK : 2;
}
