// `assay corpus merge`: the two kinds of corpus and how each merges.
// - fuzz corpora: libFuzzer inputs (raw bytes, named by content hash).
//   With a spec they merge through libFuzzer's -merge=1 (cli/corpus_command.cpp);
//   without, merge_by_content() keeps one copy of each distinct input.
// - regression corpora: saved case files, corpus/<kernel>/*.yaml (or a
//   folder of case files: its name is the kernel's). merge_cases() keeps one
//   file per distinct case, so the gate replays each bug once.
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "ops/op.h"
#include "spec/spec.h"

namespace assay::fuzz {

enum class CorpusKind { empty, fuzz, regression };

// Regression when it holds case files (*.yaml) directly or one level down.
CorpusKind corpus_kind(const std::filesystem::path& dir);

struct MergeCount {
  int64_t seen = 0, added = 0, duplicates = 0;
};

// Case files of `ins` into out/<kernel>/, deduplicated by content: the case
// itself (op, sizes, tensors' types and layouts, scalars, recipe, seed, keep), not its origin
// or file name. Rewritten so the spec path stays valid from the new folder.
MergeCount merge_cases(const std::filesystem::path& out, const std::vector<std::filesystem::path>& ins);

// An empty fuzz corpus gets the op's seed cases (Op::seed_cases), each
// encoded (Op::encode), one input file each; a corpus with inputs is left as
// it is.
void seed_fuzz_corpus(const std::filesystem::path& dir, const Op& op, const Spec& spec, const CodecLimits& lim);

// Inputs of `ins` into `out`, one copy of each distinct content.
MergeCount merge_by_content(const std::filesystem::path& out, const std::vector<std::filesystem::path>& ins);

}  // namespace assay::fuzz
