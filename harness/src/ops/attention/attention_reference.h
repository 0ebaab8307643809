// The FP64 attention reference for where the inputs live (host loops or a
// CUDA kernel, side by side), handed over in blocks of whole heads so the
// host never holds the reference and bound of a huge output at once; the
// comparison of o and lse block by block.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "backend/backend.h"
#include "core/deadline.h"
#include "judge/compare.h"
#include "ops/attention/attention_math.h"
#include "ops/attention/attention_problem.h"
#include "ops/attention/attention_reference_cuda.h"

namespace assay::attention {

std::vector<HeadBlock> head_blocks(const Sizes& z);
double block_rows(const Sizes& z);  // the most query rows a block holds (memory estimates)
// A [b, h, s(, e)] tensor's geometry restricted to the block's heads.
TensorGeom block_geom(const TensorGeom& g, const HeadBlock& blk);

void reference_host(const Problem& p, const std::byte* q, const std::byte* k, const std::byte* v, const Model& m,
                    const HeadBlock& blk, BlockAnswer& out);

Problem problem_of(const Case& c);

// a's o arrays hold rows x dv doubles, its lse arrays rows (blk.rows(sq)).
using BlockVisitor = std::function<void(const HeadBlock& blk, const AnswerArrays& a)>;
// device: the case's tensors' data starts in the backend's memory; the
// arrays handed over where `where` says.
void reference_blocks(Backend& backend, const Case& c, std::span<const std::byte* const> device, const Model& m,
                      const BlockVisitor& visit, ResultsIn where = ResultsIn::host);

// The whole FP64 answer, per tensor (inputs empty): o and lse in their
// matrix views, row-major.
std::vector<std::vector<double>> reference_arrays(Backend& backend, const Case& c,
                                                  std::span<const std::byte* const> device, const Model& m);

struct Tolerances {
  Tolerance o, lse;
};
// o (and lse) in the backend's memory against the reference, judged there
// (Backend::compare); between blocks (never
// before the first) throws DeadlineReached once `deadline` passed. keep_ref /
// keep_bound, if given, receive each tensor's whole arrays (inputs: empty).
CompareStats compare_case(Backend& backend, const Case& c, std::span<const std::byte* const> device,
                          std::span<const std::byte* const> out, const Model& m, const Tolerances& tol,
                          const Deadline& deadline, std::vector<std::vector<double>>* keep_ref,
                          std::vector<std::vector<double>>* keep_bound);

}  // namespace assay::attention
