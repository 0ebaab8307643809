// What every family's tests ask of its host zoo and of its fuzz codec, once:
// each zoo kernel gets exactly the verdict its spec expects; decoded,
// mutated, simplified and resized cases stay valid and round-trip.
#pragma once
#include <catch2/catch.hpp>

#include <functional>

#include "case/rng.h"
#include "ops/op.h"
#include "samples_support.h"

namespace assay::testing {

struct ZooCount {
  int planted = 0, correct = 0;
};
// Every host kernel of generated_kernels/<family>/host through the gate
// with `opt` (at least `at_least` of them); a correct one runs at least
// `min_correct_cases` cases (0: no floor).
inline ZooCount check_host_zoo(const char* family, const GateOptions& opt, size_t at_least,
                               int64_t min_correct_cases = 0) {
  auto backend = make_backend(BackendKind::host);
  Reporter silent;
  auto specs = sample_specs(BackendKind::host, family);
  REQUIRE(specs.size() >= at_least);
  ZooCount n;
  for (auto& file : specs) {
    Spec spec = load_spec(file);
    REQUIRE_FALSE(spec.expect.empty());
    KernelReport r = run_gate(spec, *backend, opt, silent);
    INFO(spec.name << ": got " << r.verdict() << ", expected " << spec.expect << " "
                   << (r.failures.empty() ? r.setup_error : r.failures.front().outcome.detail));
    CHECK(r.verdict() == spec.expect);
    if (spec.expect == "pass" && min_correct_cases > 0) CHECK(r.cases_run >= min_correct_cases);
    ++(spec.expect == "pass" ? n.correct : n.planted);
  }
  return n;
}

// `rounds` random genomes of `bytes` bytes: each decodes to a valid case
// that encodes back to itself; its mutant, the mutant's simplifications and
// its halved resize are valid too. `more` sees every decoded case and mutant.
inline void check_codec(const Op& op, const Spec& spec, uint64_t seed, int rounds, size_t bytes,
                        const std::function<void(const Case& decoded, const Case& mutant)>& more = {}) {
  CodecLimits lim;
  uint64_t r = seed;
  std::vector<uint8_t> data(bytes);
  for (int i = 0; i < rounds; ++i) {
    for (uint8_t& b : data) b = uint8_t((r = mix64(r)) >> 56);
    Case c = op.decode(data.data(), data.size(), spec, lim);
    op.validate(c);
    const auto enc = op.encode(c, lim);
    CHECK(op.decode(enc.data(), enc.size(), spec, lim) == c);
    Case m = op.mutate(c, r, lim);
    op.validate(m);
    for (const Case& x : op.simplifications(m)) op.validate(x);
    std::vector<int64_t> sizes;
    for (const auto& s : m.sizes) sizes.push_back(s.value / 2);
    op.validate(op.resize(m, sizes, true));
    if (more) more(c, m);
  }
}

}  // namespace assay::testing
