// What the device reference takes and gives (attention_reference_cuda.cu):
// light enough for nvcc's C++17.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/attention/attention_math.h"

namespace assay::attention {

// Heads [h0, h0 + nh) of batches [z0, z0 + nz): whole batches where one
// fits a block, else heads of one batch (at least one whole head).
struct HeadBlock {
  int64_t z0 = 0, nz = 1, h0 = 0, nh = 1;
  ASSAY_HD int64_t rows(int64_t sq) const { return nz * nh * sq; }
};
// One block's answers, row-major over the block's query rows (z, h, i):
// o's [rows x dv] and lse's [rows], each with its bound and the class it may
// also have (alt; finite: none).
struct BlockAnswer {
  std::vector<double> o, o_bound, o_alt, lse, lse_bound, lse_alt;
};
// The same arrays wherever they live (host, or the device for judging there).
struct AnswerArrays {
  double *o, *o_bound, *o_alt, *lse, *lse_bound, *lse_alt;
};
// Into device arrays, queued on `stream`. Throws InfraError on a CUDA failure.
void reference_cuda(void* stream, const Problem& p, const std::byte* q, const std::byte* k, const std::byte* v,
                    const Model& m, const HeadBlock& blk, const AnswerArrays& out);

}  // namespace assay::attention
