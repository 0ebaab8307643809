// Judging on the device (Backend::compare on cuda) must give what the host's
// compare() gives on the same bits: counts, maxima, the first bad elements
// in index order; and the guard check (GuardedTensor::first_damage) must
// find a damaged byte where the data lives.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "exec/guarded_tensor.h"
#include "exec/patterns.h"
#include "judge/compare.h"

using namespace assay;

namespace {

std::unique_ptr<Backend> gpu_or_skip() {
  std::string why;
  if (!cuda_available(&why)) return nullptr;
  return make_backend(BackendKind::cuda);
}

// An output of `rows` x `cols` in a padded (or column-major) layout with its
// reference, bound, terms and one class reference, values near the
// reference with a few planted faults: far off, NaN where finite, the wrong
// infinity, poison (unwritten), and elements just inside and past the bound.
struct Planted {
  TensorGeom g;
  std::vector<std::byte> out;  // the whole span
  std::vector<double> ref, bound, terms, alt;
  Tolerance tol;
};

Planted plant(DType t, int64_t rows, int64_t cols, bool col_major, uint64_t seed, int faults) {
  Planted p;
  const int64_t pad = 3;
  p.g = col_major ? TensorGeom::matrix(t, rows, cols, 1, rows + pad, 2) : TensorGeom::matrix(t, rows, cols, cols + pad, 1, 2);
  const int size = dtype_bytes(t);
  p.out.assign(size_t(p.g.span()) * size_t(size), std::byte{0x5a});
  const size_t n = size_t(rows * cols);
  p.ref.resize(n), p.bound.resize(n), p.terms.resize(n), p.alt.assign(n, 0.0);
  p.tol.out = t, p.tol.u_eff = std::ldexp(1.0, -24), p.tol.scale = 2, p.tol.u_epilogue = std::ldexp(1.0, -24);
  p.tol.poisoned = true, p.tol.poison = poison_bits(t);
  p.tol.abs_floor = 1e-30;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-4, 4);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = size_t(r * cols + c);
      const double ref = is_integer(t) ? std::floor(u(rng) * 100) : u(rng);
      p.ref[i] = ref, p.bound[i] = std::fabs(ref) * 64, p.terms[i] = std::fabs(ref);
      double got = ref * (1 + std::ldexp(u(rng), -24));  // well inside the bound
      uint64_t bits = encode(t, got);
      if (faults > 0 && (rng() % 97) == 0) {
        switch (is_integer(t) ? (rng() % 2) * 2 : rng() % 6) {  // integers: far off or unwritten
          case 0: bits = encode(t, ref + 1.0); break;                // far off
          case 1: bits = encode(t, NAN); break;  // NaN where finite
          case 2: bits = p.tol.poison; break;                        // unwritten
          case 3: p.ref[i] = INFINITY, bits = encode(t, -INFINITY); break;                // the wrong infinity
          case 4: p.ref[i] = INFINITY, p.alt[i] = NAN, bits = encode(t, NAN); break;      // NaN the class ref allows
          default: p.ref[i] = NAN, bits = encode(t, 1.0); break;                          // finite where NaN
        }
      }
      store_bits(t, p.out.data() + p.g.index(r, c) * size, bits);
    }
  return p;
}

// The same comparison on both backends.
void same_on_both(Backend& gpu, const Planted& p) {
  const CompareStats host = compare(p.tol, p.g, p.out.data(), p.ref.data(), p.bound.data(), p.terms.data(),
                                    std::vector<const double*>{p.alt.data()});
  auto up = [&](const void* data, size_t bytes) {
    Buffer b = gpu.allocate(std::max<size_t>(bytes, 1));
    std::vector<std::byte> copy(b.bytes);
    std::memcpy(copy.data(), data, bytes);
    gpu.upload(b, copy.data());
    return b;
  };
  Buffer out = up(p.out.data(), p.out.size());
  const size_t bytes = p.ref.size() * sizeof(double);
  Buffer ref = up(p.ref.data(), bytes), bound = up(p.bound.data(), bytes), terms = up(p.terms.data(), bytes),
         alt = up(p.alt.data(), bytes);
  ClassRefs classes;
  classes.ref[classes.count++] = reinterpret_cast<const double*>(alt.data);
  const CompareStats dev = gpu.compare(p.tol, p.g, out.data, reinterpret_cast<const double*>(ref.data),
                                       reinterpret_cast<const double*>(bound.data),
                                       reinterpret_cast<const double*>(terms.data), classes);
  for (Buffer* b : {&out, &ref, &bound, &terms, &alt}) gpu.release(*b);
  CHECK(dev.checked == host.checked);
  CHECK(dev.exact_checked == host.exact_checked);
  CHECK(dev.bad == host.bad);
  CHECK(dev.bad_class == host.bad_class);
  CHECK(dev.unwritten == host.unwritten);
  CHECK(dev.finite == host.finite);
  CHECK(dev.max_ulps == host.max_ulps);
  CHECK(dev.max_ratio == host.max_ratio);
  CHECK(dev.sq_error == Approx(host.sq_error).epsilon(1e-9));  // another summation order
  REQUIRE(dev.first_bad.size() == host.first_bad.size());
  for (size_t k = 0; k < host.first_bad.size(); ++k) {
    CHECK(dev.first_bad[k].row == host.first_bad[k].row);
    CHECK(dev.first_bad[k].col == host.first_bad[k].col);
    CHECK(std::memcmp(&dev.first_bad[k].got, &host.first_bad[k].got, sizeof(double)) == 0);
    CHECK(std::memcmp(&dev.first_bad[k].expected, &host.first_bad[k].expected, sizeof(double)) == 0);
    CHECK(dev.first_bad[k].ulps == host.first_bad[k].ulps);
    CHECK(dev.first_bad[k].ratio == host.first_bad[k].ratio);
  }
}

}  // namespace

TEST_CASE("device comparison equals the host's on the same bits", "[compare][device]") {
  auto gpu = gpu_or_skip();
  if (!gpu) {
    WARN("no CUDA device: device comparison not tested");
    return;
  }
  struct Shape {
    int64_t rows, cols;
  };
  // One tile, several tiles of one block, many blocks (the first bad
  // elements then come from several blocks), and a single element.
  const Shape shapes[] = {{1, 1}, {7, 33}, {64, 300}, {1500, 2100}};
  uint64_t seed = 1;
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i32})
    for (const Shape& s : shapes)
      for (bool col_major : {false, true})
        for (int faults : {0, 1}) {
          INFO(name(t) << " " << s.rows << "x" << s.cols << (col_major ? " col-major" : "") << " faults " << faults);
          const Planted p = plant(t, s.rows, s.cols, col_major, seed++, faults);
          same_on_both(*gpu, p);
        }
}

TEST_CASE("device comparison: bad elements only in a late block come back first, in index order", "[compare][device]") {
  auto gpu = gpu_or_skip();
  if (!gpu) {
    WARN("no CUDA device: device comparison not tested");
    return;
  }
  Planted p = plant(DType::f32, 4096, 1024, false, 77, 0);
  const int size = 4;
  for (int64_t i : {int64_t(4000) * 1024 + 5, int64_t(3000) * 1024 + 9, int64_t(3000) * 1024 + 8}) {
    const int64_t r = i / 1024, c = i % 1024;
    store_bits(DType::f32, p.out.data() + p.g.index(r, c) * size, encode(DType::f32, p.ref[size_t(i)] + 10));
  }
  same_on_both(*gpu, p);
}

TEST_CASE("guard check on the device finds a damaged guard or gap byte", "[compare][device]") {
  auto gpu = gpu_or_skip();
  if (!gpu) {
    WARN("no CUDA device: guard check not tested");
    return;
  }
  const TensorGeom g = TensorGeom::matrix(DType::bf16, 37, 29, 31, 1, 3);  // rows padded by 2, offset 3
  GuardedTensor t(*gpu, g);
  t.paint_canary();
  gpu->fill_constant(t.buffer(), [&] {
    TensorGeom s = g;
    s.offset += int64_t(t.guard() / 2);
    return s;
  }(), 0x1234);
  CHECK_FALSE(t.first_damage(t.buffer()));
  std::vector<std::byte> image(t.buffer().bytes);
  gpu->download(t.buffer(), image.data());
  const size_t gap = t.guard() + size_t(g.index(5, 29)) * 2 + 1;  // row 5's padding
  image[gap] ^= std::byte{1};
  gpu->upload(t.buffer(), image.data());
  CHECK(t.first_damage(t.buffer()) == gap);
  image[gap] ^= std::byte{1};
  image[image.size() - 3] ^= std::byte{0x80};  // the guard after
  gpu->upload(t.buffer(), image.data());
  CHECK(t.first_damage(t.buffer()) == image.size() - 3);
}
