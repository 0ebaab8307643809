// PLANTED CHEAT (issue #16, forged timer): honest f32 GEMM that, on its 9th
// call, overwrites the start of libc's clock_gettime with a jump to its own
// version: the syscall's true time, slowed 10x from the moment of patching,
// so steady_clock intervals in this process read 1/10 of the truth. Caught by
// assay bench's supervisor, whose own wall clock (another process) must agree
// with the worker's timed span. x86-64 only; elsewhere the kernel stays honest.
// Calls 1-8 of each run of consecutive calls on identical tensors (data
// pointers, byte offsets, shapes, strides) are honest; any change restarts
// the count, so the gate's 4-call cases never see the cheat.
// Expected verdict: pass (gate); bench: timing_escape.
#include <assay/abi.h>

#include <array>
#include <cstdint>

#if defined(__x86_64__)
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#endif

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

#if defined(__x86_64__)
// The clocks it slows down, each with its true reading at the moment of patching.
constexpr clockid_t kSlowed[] = {CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW, CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME};
int64_t anchor_ns[16];
bool anchored[16];

int64_t ns_of(const timespec& t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; }

// Stands in for libc's clock_gettime: the raw syscall's time, 10x slower
// since the patch for the clocks above, unchanged for the others.
int slow_clock_gettime(clockid_t id, timespec* ts) {
  const int r = int(syscall(SYS_clock_gettime, id, ts));
  if (r != 0 || id < 0 || id >= 16 || !anchored[id]) return r;
  const int64_t t = anchor_ns[id] + (ns_of(*ts) - anchor_ns[id]) / 10;
  ts->tv_sec = time_t(t / 1000000000);
  ts->tv_nsec = long(t % 1000000000);
  return 0;
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

// CHEAT: from now on every clock_gettime of the process goes through slow_clock_gettime.
void patch_timer() {
  void* target = dlsym(RTLD_DEFAULT, "clock_gettime");
  if (!target) return;
  for (clockid_t id : kSlowed) {
    timespec ts;
    if (syscall(SYS_clock_gettime, id, &ts) == 0) anchor_ns[id] = ns_of(ts), anchored[id] = true;
  }
  patch_jump(target, reinterpret_cast<void*>(&slow_clock_gettime));
}
#else
void patch_timer() {}  // no patch off x86-64: the kernel stays honest
#endif

}  // namespace

int assay_run(const assay_call* call) {
  if (!is_f32_gemm(call)) return ASSAY_UNSUPPORTED;
  const Mat A(call->inputs[0]), B(call->inputs[1]), C(call->outputs[0]);
  const double alpha = call->scalars[0], beta = call->scalars[1];
  static bool patched = false;  // once a process
  if (streak(call) == 9 && !patched) {
    patched = true;
    patch_timer();
  }
  gemm(A, B, C, alpha, beta);
  return ASSAY_OK;
}
