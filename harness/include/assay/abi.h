/* assay kernel ABI, version 1: the contract between the harness and a
 * candidate kernel. Plain C so that any toolchain can implement it.
 * docs/abi.md is the normative description. */
#ifndef ASSAY_ABI_H
#define ASSAY_ABI_H

#include <stdint.h>
#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ASSAY_ABI_VERSION 1

/* FP8 type codes (DLDataType.code, bits 8, lanes 1): DLPack 1.x's
 * kDLFloat8_e4m3fn and kDLFloat8_e5m2. Debian's DLPack (0.6) has no FP8
 * codes, so a kernel compares against these, which hold for either header. */
#define ASSAY_DL_FLOAT8_E4M3FN 10
#define ASSAY_DL_FLOAT8_E5M2 12
/* And DLPack's own names where dlpack.h predates them (before 1.1). */
#if !defined(DLPACK_MAJOR_VERSION) || (DLPACK_MAJOR_VERSION == 1 && DLPACK_MINOR_VERSION < 1)
enum { kDLFloat8_e4m3fn = ASSAY_DL_FLOAT8_E4M3FN, kDLFloat8_e5m2 = ASSAY_DL_FLOAT8_E5M2 };
#endif

/* Return codes of assay_run. Anything other than these two is an error. */
#define ASSAY_OK 0
#define ASSAY_UNSUPPORTED 1 /* the kernel refuses this case and wrote nothing */

typedef struct assay_call {
  int32_t abi_version;                      /* ASSAY_ABI_VERSION */
  const char* op;                           /* op family, e.g. "gemm" */
  int32_t num_inputs;  const DLTensor* inputs;  /* read-only */
  int32_t num_outputs; DLTensor* outputs;       /* may hold initial values */
  int32_t num_scalars; const double* scalars;
  void* stream;                             /* cudaStream_t for cuda kernels, NULL on host */
  void* workspace; uint64_t workspace_bytes;
} assay_call;

/* Exported by a candidate with C linkage (the name can be changed with the
 * spec's `entry`). GEMM: inputs = {A (m x k), B (k x n)}, outputs = {C (m x n)}
 * holding C0 on entry, scalars = {alpha, beta}; C = alpha*A*B + beta*C0.
 * When beta == 0, C0 must not be read. */
int assay_run(const assay_call* call);

typedef int (*assay_run_fn)(const assay_call* call);

#ifdef __cplusplus
}
#endif

#endif /* ASSAY_ABI_H */
