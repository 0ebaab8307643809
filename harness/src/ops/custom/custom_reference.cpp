#include "ops/custom/custom_reference.h"

#include <array>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.h"
#include "exec/call_frame.h"

namespace assay::custom {
namespace {

constexpr const char* kModeNames[4] = {"f64", "f32", "f16", "bf16"};

// The loader's cache key covers the source, the flags and assay/abi.h; the
// reference also includes assay/reference.h, so its hash goes in as a define
// (not named like the header's include guard, ASSAY_REFERENCE_H).
std::string reference_header_hash() {
  std::ifstream in(kernel_include_dir() / "assay" / "reference.h", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : ss.str()) h = (h ^ c) * 0x100000001b3ull;
  return fmt::format("{:016x}", h);
}

}  // namespace

int reference_mode(DType t) {
  switch (t) {
    case DType::f64: return 0;
    case DType::f32: return 1;
    case DType::f16: return 2;
    default: return 3;  // bf16
  }
}

References::References(const Spec& spec, const Def& def) : spec_(spec), source_(def.reference) {
  spec_.impl.reset();  // (a copy of the spec for the loader; it must not hold the op that holds it)
  build(0);
  if (def.tolerance.form == ToleranceForm::same_precision)
    for (const TensorDef& t : def.tensors)
      if (t.role != Role::input) build(reference_mode(t.dtype));
}

assay_run_fn References::build(int mode) const {
  std::lock_guard lock(mu_);
  auto it = builds_.find(mode);
  if (it != builds_.end()) return it->second.run;
  Spec s = spec_;
  s.name = fmt::format("{}-reference-{}", spec_.name, kModeNames[mode]);
  s.source = source_, s.backend = BackendKind::host, s.entry = "assay_run", s.libs.clear();
  s.flags = {fmt::format("-DASSAY_REFERENCE_DTYPE={}", mode), "-DASSAY_REFERENCE_HEADER_HASH=" + reference_header_hash()};
  LoaderOptions lo;
  lo.open = true;  // the user's reference is trusted: loaded here, never in a worker
  try {
    return builds_.emplace(mode, load_kernel(s, lo)).first->second.run;
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: key 'reference': the reference ({} build, ASSAY_REFERENCE_DTYPE={}) cannot be "
                                 "used: {}",
                                 spec_.file.string(), kModeNames[mode], mode, e.what()));
  }
}

void References::run(int mode, const Case& c, std::span<std::vector<double>> data) const {
  const assay_run_fn fn = build(mode);
  const size_t n = c.tensors.size();
  std::vector<std::array<int64_t, TensorGeom::kMaxDims>> shapes(n), strides(n);
  std::vector<DLTensor> views(n);
  for (size_t i = 0; i < n; ++i) {
    const CaseTensor& t = c.tensors[i];
    const int nd = int(t.shape.size());
    int64_t stride = 1;  // compact row-major, strides given (a reference must read them anyway)
    for (int d = nd - 1; d >= 0; --d) {
      shapes[i][size_t(d)] = t.shape[size_t(d)], strides[i][size_t(d)] = stride;
      stride *= std::max<int64_t>(t.shape[size_t(d)], 1);
    }
    if (data[i].empty()) data[i].resize(1);  // a valid address for an empty tensor
    views[i] = DLTensor{data[i].data(), DLDevice{kDLCPU, 0}, nd, dl_dtype(DType::f64), shapes[i].data(),
                        strides[i].data(), 0};
  }
  std::vector<double> scalars;
  for (auto& s : c.scalars) scalars.push_back(s.value);
  const int ni = c.num_inputs();
  const assay_call call{ASSAY_ABI_VERSION, c.op.c_str(), ni, views.data(), int32_t(n) - ni, views.data() + ni,
                        int32_t(scalars.size()), scalars.data(), nullptr, nullptr, 0};
  const int rc = fn(&call);
  if (rc != ASSAY_OK)
    throw InfraError(fmt::format("the reference {} ({} build) returned {} for the case {} (it must return 0)",
                                 source_.string(), kModeNames[mode], rc, describe(c)));
}

}  // namespace assay::custom
