// The host backend: buffers in host memory, candidates are C++ functions.
// It is the embedded default where no GPU is present, and makes every part of
// the pipeline testable in CI.
#pragma once
#include <map>
#include <set>

#include "backend/backend.h"

namespace assay {

class HostBackend final : public Backend {
 public:
  BackendKind kind() const override { return BackendKind::host; }
  DLDevice device() const override { return DLDevice{kDLCPU, 0}; }
  void* stream() override { return nullptr; }
  size_t memory_budget() const override;
  Buffer allocate(size_t bytes) override;
  Buffer allocate_exact(size_t bytes) override;
  void release(Buffer& b) override;
  void fill_pattern(Buffer b, uint64_t pattern, int width) override;
  void fill_tensor(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed, uint32_t tensor) override;
  void fill_patched(Buffer b, const TensorGeom& g, const RecipeParams& p, uint64_t seed, uint32_t tensor) override;
  void copy_rotated(Buffer dst, Buffer src, const TensorGeom& g, const Rotation& rot) override;
  void fill_constant(Buffer b, const TensorGeom& g, uint64_t bits) override;
  void download(Buffer b, std::byte* host) override;
  void download_range(Buffer b, size_t offset, size_t bytes, std::byte* host) override;
  void upload(Buffer b, const std::byte* host) override;
  void copy(Buffer dst, Buffer src) override;
  std::optional<size_t> first_difference(Buffer x, Buffer y) override;
  void copy_elements(Buffer dst, Buffer src, const TensorGeom& g) override;
  void read(const void* p, size_t bytes, void* host) override;
  CompareStats compare(const Tolerance& tol, const TensorGeom& g, const std::byte* out, const double* ref,
                       const double* bound, const double* terms, const ClassRefs& classes) override;
  std::string synchronize() override { return {}; }
  std::optional<Buffer> owner_of(const void* p) const override;

 private:
  std::map<const std::byte*, Buffer> live_;  // by start address
  std::set<const std::byte*> exact_;         // allocate_exact's, from the heap
};

}  // namespace assay
