// Bit patterns the harness paints around and into buffers.
// The poison NaNs are signalling (quiet bit clear): any arithmetic on them,
// e.g. 0 * poison, yields a quiet NaN with other bits, so a kernel that reads
// C0 when beta == 0 is told apart from one that never wrote the element.
//  - canary: fills guard zones and padding between rows; a large negative
//    value (as the netlib tester's -1e10), so a kernel that reads padding as
//    data goes visibly wrong too.
//  - poison: fills outputs that hold no C0; a NaN with a recognisable
//    payload, so unwritten elements are told apart from computed NaNs.
//    Integers have no NaN: 0xa5.. repeated, a large negative value that no
//    index or count takes, and whose halves differ from the values a kernel
//    writing 32 bits into a 64-bit output leaves (the high word stays 0xa5a5a5a5).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace assay {

// (FP8: its most negative finite value; -1e10 would be NaN in e4m3.)
inline uint64_t canary_bits(DType t) {
  return encode(t, is_fp8(t) ? -max_finite(t) : t == DType::f16 ? -60000.0 : -1.0e10);
}

inline uint64_t poison_bits(DType t) {
  switch (t) {
    case DType::f64: return 0x7ff5a5a5a5a5a5a5ull;
    case DType::f32: return 0x7fa5a5a5u;
    case DType::f16: return 0x7d5au;
    case DType::i64: return 0xa5a5a5a5a5a5a5a5ull;
    case DType::i32: return 0xa5a5a5a5u;
    case DType::e4m3: return 0x7fu;  // e4m3fn's one NaN (no payload to mark)
    case DType::e5m2: return 0x7du;  // a signalling NaN
    default: return 0x7fa5u;  // bf16
  }
}

}  // namespace assay
