// Which shapes assay bench times: a spec's `bench:` list or a --shapes file
// (`shapes:`), each entry a mapping of the op's size names to values, e.g.
//   bench: [{m: 4096, n: 4096, k: 4096}, {m: 16, n: 4096, k: 14336}]
// and the case timed at each (docs/bench.md).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "case/case.h"
#include "spec/spec.h"

namespace assay {
class Op;
}

namespace assay::bench {

// Throws InputError "FILE:LINE: key 'KEY': problem" for anything but a
// non-empty list of mappings of names to sizes in [0, 2^40].
std::vector<BenchShape> read_shapes(const YAML::Node& list, const std::string& file, const std::string& key, int line);
// A --shapes file: a mapping whose `shapes:` key is such a list.
std::vector<BenchShape> load_shapes_file(const std::filesystem::path& file);

// "m=4096 n=4096 k=4096"
std::string shape_text(const BenchShape& shape);

// The op's realistic shapes scaled for a CPU: every size divided by
// kHostShapeDivisor (at least 1). A 4096^3 GEMM takes minutes a call on
// the host; the defaults of a host bench are 512^3 and the like.
inline constexpr int64_t kHostShapeDivisor = 8;
std::vector<BenchShape> host_shapes(std::vector<BenchShape> shapes);

// The case timed for a shape: the op's plain case with these sizes (every
// tensor compact, no offsets), uniform values in [-1, 1) from `seed`.
// Throws InputError when the shape names a size the op has not, lacks one
// it has, or falls outside the spec's requires.
Case bench_case(const Op& op, const Spec& spec, const BenchShape& shape, uint64_t seed);

}  // namespace assay::bench
