#include "exec/guarded_tensor.h"

#include <algorithm>
#include <cstring>

#include "exec/patterns.h"

namespace assay {

GuardedTensor::GuardedTensor(Backend& backend, const TensorGeom& g, Allocation alloc)
    : backend_(backend), geom_(g), guard_(alloc == Allocation::exact ? 0 : kGuardBytes) {
  size_t data_bytes = size_t(g.span()) * dtype_bytes(g.dtype);
  // An empty tensor still gets an address: one element, which holds the canary.
  buffer_ = alloc == Allocation::exact ? backend.allocate_exact(std::max<size_t>(data_bytes, dtype_bytes(g.dtype)))
                                    : backend.allocate((kGuardBytes + data_bytes + 7) / 8 * 8 + kGuardBytes);
}

GuardedTensor::~GuardedTensor() { backend_.release(buffer_); }

void GuardedTensor::paint_canary() { backend_.fill_pattern(buffer_, canary_bits(geom_.dtype), dtype_bytes(geom_.dtype)); }

std::vector<std::byte> GuardedTensor::download() const {
  std::vector<std::byte> image(buffer_.bytes);
  backend_.download(buffer_, image.data());
  return image;
}

template <class F>
void GuardedTensor::for_each_element_run(F&& f) const {
  const TensorGeom& g = geom_;
  const size_t size = dtype_bytes(g.dtype);
  auto at = [&](int64_t r, int64_t c) { return guard_ + size_t(g.index(r, c)) * size; };
  if (g.rows() == 0 || g.cols() == 0) return;
  if (g.row_major()) {  // rows nested in address order: one run per row
    for (int64_t r = 0; r < g.rows(); ++r) f(at(r, 0), at(r, 0) + size_t(g.cols()) * size);
  } else if (g.col_stride() == 1 && g.row_stride() >= g.cols()) {
    // Contiguous rows whose outer dimensions interleave ([b, s, h, d]
    // memory seen as [b, h, s, d]): the runs sorted by address.
    std::vector<size_t> starts;
    starts.reserve(size_t(g.rows()));
    for (int64_t r = 0; r < g.rows(); ++r) starts.push_back(at(r, 0));
    std::sort(starts.begin(), starts.end());
    for (size_t s : starts) f(s, s + size_t(g.cols()) * size);
  } else if (g.ndim <= 2 && g.row_stride() == 1 && g.col_stride() >= g.rows()) {  // column-major (2-D): one run per column
    for (int64_t c = 0; c < g.cols(); ++c) f(at(0, c), at(0, c) + size_t(g.rows()) * size);
  } else {  // anything else: element by element, in address order
    std::vector<size_t> starts;
    starts.reserve(size_t(g.count()));
    for (int64_t r = 0; r < g.rows(); ++r)
      for (int64_t c = 0; c < g.cols(); ++c) starts.push_back(at(r, c));
    std::sort(starts.begin(), starts.end());
    for (size_t s : starts) f(s, s + size);
  }
}

std::optional<size_t> GuardedTensor::first_damage(const std::vector<std::byte>& image) const {
  const uint64_t canary = canary_bits(geom_.dtype);
  const size_t width = dtype_bytes(geom_.dtype);
  const auto* pattern = reinterpret_cast<const std::byte*>(&canary);
  std::optional<size_t> damage;
  size_t pos = 0;
  auto check_gap = [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end && !damage; ++i)
      if (image[i] != pattern[i % width]) damage = i;
  };
  for_each_element_run([&](size_t begin, size_t end) {
    if (begin > pos) check_gap(pos, begin);
    pos = std::max(pos, end);
  });
  check_gap(pos, image.size());
  return damage;
}

std::optional<size_t> GuardedTensor::first_element_change(const std::vector<std::byte>& before,
                                                          const std::vector<std::byte>& after) const {
  std::optional<size_t> change;
  for_each_element_run([&](size_t begin, size_t end) {
    if (change || std::memcmp(before.data() + begin, after.data() + begin, end - begin) == 0) return;
    for (size_t i = begin; i < end; ++i)
      if (before[i] != after[i]) { change = i; return; }
  });
  return change;
}

}  // namespace assay
