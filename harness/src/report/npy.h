// Minimal .npy writer (format 1.0) for dumping tensors next to a repro.
#pragma once
#include <filesystem>
#include <vector>

#include "core/tensor_geom.h"

namespace assay {

// Writes the N-D tensor g found at `data` (host memory) as a C-order array
// of its shape and dtype; bf16, which numpy lacks, is widened to float32.
void write_npy(const std::filesystem::path& file, const TensorGeom& g, const std::byte* data);
// Writes doubles (C order) as an array of the shape of `shape_of`.
void write_npy(const std::filesystem::path& file, const TensorGeom& shape_of, const std::vector<double>& values);

}  // namespace assay
