#include "ops/moe_topk/moe_topk_judge.h"

#include <cmath>

#include "core/deadline.h"
#include "exec/patterns.h"
#include "ops/moe_topk/moe_topk_routing.h"

namespace assay::moe_topk {
namespace {

// One input tensor where the host can read it: on cuda its span is
// downloaded (from its data start: the backend's buffers may be slices).
struct HostTensor {
  std::vector<std::byte> image;
  const std::byte* data = nullptr;
  TensorGeom geom;
  double at(int64_t row, int64_t col) const {
    return decode(geom.dtype, load_bits(geom.dtype, data + geom.index(row, col) * dtype_bytes(geom.dtype)));
  }
};
HostTensor host_tensor(Backend& backend, const Case& c, int i, const std::byte* p) {
  HostTensor t;
  t.geom = c.geom(i), t.data = p;
  if (backend.kind() != BackendKind::host && p && t.geom.rows() * t.geom.cols() > 0) {
    t.image.resize(size_t(t.geom.span()) * size_t(dtype_bytes(t.geom.dtype)));
    backend.download(Buffer{const_cast<std::byte*>(p), t.image.size()}, t.image.data());
    t.data = t.image.data();
  }
  return t;
}

// The inputs of a case on the host, and each token's routing from them.
class Tokens {
 public:
  Tokens(Backend& backend, const Settings& s, const Case& c, std::span<const std::byte* const> device, double scale)
      : s_(s), z_(sizes_of(c)), prec_{0x1p-24, scale} {
    const Positions at = positions(c);
    logits_ = host_tensor(backend, c, at.logits, device[size_t(at.logits)]);
    x_.resize(size_t(z_.experts));
    if (at.bias >= 0) {
      const HostTensor b = host_tensor(backend, c, at.bias, device[size_t(at.bias)]);
      for (int64_t e = 0; e < z_.experts; ++e) bias_.push_back(b.geom.rows() == 1 ? b.at(0, e) : b.at(e, 0));
    }
  }
  // Token t's routing, valid until the next call (its arrays are reused).
  const TokenRouting& route(int64_t t) {
    for (int64_t e = 0; e < z_.experts; ++e) x_[size_t(e)] = logits_.at(t, e);
    moe_topk::route(s_, z_.topk, x_, bias_, prec_, routing_);
    return routing_;
  }
  const Sizes& sizes() const { return z_; }

 private:
  const Settings& s_;
  Sizes z_;
  Precision prec_;
  HostTensor logits_;
  std::vector<double> x_, bias_;
  TokenRouting routing_;
};

double slot(const TensorGeom& g, const std::byte* out, int64_t t, int64_t j) {
  return decode(g.dtype, load_bits(g.dtype, out + g.index(t, j) * dtype_bytes(g.dtype)));
}

}  // namespace

std::vector<std::vector<double>> reference(Backend& backend, const Settings& s, const Case& c,
                                           std::span<const std::byte* const> device) {
  Tokens tokens(backend, s, c, device, 2.0);
  const Sizes z = tokens.sizes();
  const Positions at = positions(c);
  std::vector<std::vector<double>> out(c.tensors.size());
  std::vector<double>&w = out[size_t(at.weights)], &idx = out[size_t(at.indices)];
  w.assign(size_t(z.tokens * z.topk), NAN), idx.assign(size_t(z.tokens * z.topk), -1.0);
  std::vector<double> bound(size_t(z.topk));
  for (int64_t t = 0; t < z.tokens; ++t) {
    const TokenRouting& r = tokens.route(t);
    if (r.undefined) continue;
    weights_of(s, r, r.chosen, &w[size_t(t * z.topk)], bound.data());
    for (int64_t j = 0; j < z.topk; ++j) idx[size_t(t * z.topk + j)] = double(r.chosen[size_t(j)]);
  }
  return out;
}

CompareStats judge(Backend& backend, const Settings& s, const JudgeInput& in) {
  const Case& c = in.c;
  const Positions at = positions(c);
  Tokens tokens(backend, s, c, in.device, in.scale);
  const Sizes z = tokens.sizes();
  const TensorGeom gw = c.geom(at.weights), gi = c.geom(at.indices);
  // The routing's order-dependent rules run on the host: the outputs (topk per token) come there.
  const std::vector<std::byte> w_image = output_on_host(backend, in, at.weights),
                               i_image = output_on_host(backend, in, at.indices);
  const std::byte *w_out = w_image.data(), *i_out = i_image.data();
  const size_t slots = size_t(z.tokens * z.topk);
  std::vector<double> ref_w(slots), bound_w(slots), ref_i(slots), bound_i(slots, 0.0);
  std::vector<int64_t> got(size_t(z.topk));
  for (int64_t t = 0; t < z.tokens; ++t) {
    if (t % 4096 == 4095 && in.deadline.passed()) throw DeadlineReached("the comparison was still running at the deadline");
    const TokenRouting& r = tokens.route(t);
    const size_t row = size_t(t * z.topk);
    for (int64_t j = 0; j < z.topk; ++j) {
      const double v = slot(gi, i_out, t, j);
      got[size_t(j)] = v >= -1e18 && v <= 1e18 ? int64_t(v) : -1;
    }
    if (r.undefined) {  // any written value: the answer is its own reference
      for (int64_t j = 0; j < z.topk; ++j)
        ref_i[row + size_t(j)] = double(got[size_t(j)]), ref_w[row + size_t(j)] = slot(gw, w_out, t, j);
      std::fill(bound_w.begin() + long(row), bound_w.begin() + long(row + size_t(z.topk)), 0.0);
      continue;
    }
    const bool accepted = !judge_choice(s, r, got);
    const std::vector<int64_t>& chosen = accepted ? got : r.chosen;
    weights_of(s, r, chosen, &ref_w[row], &bound_w[row]);
    for (int64_t j = 0; j < z.topk; ++j) ref_i[row + size_t(j)] = double(chosen[size_t(j)]);
  }
  Tolerance ti;
  ti.out = DType::i32, ti.exact = true, ti.exact_bits = -1074;
  ti.poisoned = true, ti.poison = poison_bits(DType::i32);
  Tolerance tw;
  tw.out = DType::f32, tw.u_eff = 0x1p-24, tw.scale = in.scale;
  tw.poisoned = true, tw.poison = poison_bits(DType::f32);
  tw.abs_extra = in.scale * 0x1p-126;  // underflow of a tiny score or quotient
  CompareStats total, weights;
  if (slots > 0) {
    total = compare(ti, gi, i_out, ref_i.data(), bound_i.data());
    for (BadElement& b : total.first_bad) b.tensor = at.indices;
    weights = compare(tw, gw, w_out, ref_w.data(), bound_w.data());
    for (BadElement& b : weights.first_bad) b.tensor = at.weights;
    accumulate(total, weights, 0);
  }
  if (in.keep_ref) {
    in.keep_ref->assign(c.tensors.size(), {}), in.keep_bound->assign(c.tensors.size(), {});
    (*in.keep_ref)[size_t(at.weights)] = std::move(ref_w), (*in.keep_bound)[size_t(at.weights)] = std::move(bound_w);
    (*in.keep_ref)[size_t(at.indices)] = std::move(ref_i), (*in.keep_bound)[size_t(at.indices)] = std::move(bound_i);
  }
  return total;
}

}  // namespace assay::moe_topk
