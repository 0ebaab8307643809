// Minimal .npy writer (format 1.0) for dumping tensors next to a repro.
#pragma once
#include <filesystem>
#include <vector>

#include "core/tensor_geom.h"

namespace assay {

// Writes the logical rows x cols tensor g found at `data` (host memory) as a
// C-order array of its dtype; bf16, which numpy lacks, is widened to float32.
void write_npy(const std::filesystem::path& file, const TensorGeom& g, const std::byte* data);
// Writes a rows x cols array of doubles (row-major).
void write_npy(const std::filesystem::path& file, int64_t rows, int64_t cols, const std::vector<double>& values);

}  // namespace assay
