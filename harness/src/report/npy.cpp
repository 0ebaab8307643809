#include "report/npy.h"

#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "core/error.h"

namespace assay {
namespace {

// The shape as a Python tuple: "(3, 4)", "(5,)", "()".
std::string shape_text(const TensorGeom& g) {
  std::string s = "(";
  for (int d = 0; d < g.ndim; ++d) s += fmt::format("{}{}", d ? ", " : "", g.shape[d]);
  return s + (g.ndim == 1 ? ",)" : ")");
}

void write_npy_raw(const std::filesystem::path& file, const char* descr, const std::string& shape,
                   const std::vector<char>& payload) {
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  // magic(6) + version(2) + length(2) + header + '\n' is a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(file, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = uint16_t(header.size());
  out.write(reinterpret_cast<const char*>(&len), 2);
  out << header;
  out.write(payload.data(), std::streamsize(payload.size()));
  if (!out) throw InfraError("cannot write " + file.string());
}

}  // namespace

void write_npy(const std::filesystem::path& file, const TensorGeom& g, const std::byte* data) {
  const bool widen = g.dtype == DType::bf16 || is_fp8(g.dtype);  // numpy has neither: as f32
  const int in_size = dtype_bytes(g.dtype), out_size = widen ? 4 : in_size;
  std::vector<char> payload(size_t(g.count()) * out_size);
  char* p = payload.data();
  for (int64_t r = 0; r < g.rows(); ++r)
    for (int64_t c = 0; c < g.cols(); ++c, p += out_size) {
      uint64_t bits = load_bits(g.dtype, data + g.index(r, c) * in_size);
      if (widen) bits = f32_bits(float(decode(g.dtype, bits)));
      store_bits(widen ? DType::f32 : g.dtype, p, bits);
    }
  const char* descr = g.dtype == DType::f64   ? "<f8"
                      : g.dtype == DType::f16 ? "<f2"
                      : g.dtype == DType::i64 ? "<i8"
                      : g.dtype == DType::i32 ? "<i4"
                                              : "<f4";
  write_npy_raw(file, descr, shape_text(g), payload);
}

void write_npy(const std::filesystem::path& file, const TensorGeom& shape_of, const std::vector<double>& values) {
  std::vector<char> payload(values.size() * 8);
  std::memcpy(payload.data(), values.data(), payload.size());
  write_npy_raw(file, "<f8", shape_text(shape_of), payload);
}

}  // namespace assay
