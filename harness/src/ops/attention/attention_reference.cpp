#include "ops/attention/attention_reference.h"

#include "ops/op.h"

#include <algorithm>

namespace assay::attention {
namespace {

// Elements of o a block holds at most (its reference, bound and class: 24
// bytes each on the host).
constexpr int64_t kBlockElements = int64_t(1) << 21;

int64_t per_head(const Sizes& z) { return z.sq * std::max<int64_t>(z.dv, 1); }

}  // namespace

std::vector<HeadBlock> head_blocks(const Sizes& z) {
  std::vector<HeadBlock> out;
  const int64_t head = per_head(z);
  if (z.hq * head <= kBlockElements) {
    const int64_t nz = std::max<int64_t>(1, kBlockElements / (z.hq * head));
    for (int64_t z0 = 0; z0 < z.b; z0 += nz) out.push_back({z0, std::min(nz, z.b - z0), 0, z.hq});
    return out;
  }
  const int64_t nh = std::max<int64_t>(1, kBlockElements / head);
  for (int64_t z0 = 0; z0 < z.b; ++z0)
    for (int64_t h0 = 0; h0 < z.hq; h0 += nh) out.push_back({z0, 1, h0, std::min(nh, z.hq - h0)});
  return out;
}

double block_rows(const Sizes& z) {
  double most = 0;
  for (const HeadBlock& b : head_blocks(z)) most = std::max(most, double(b.rows(z.sq)));
  return most;
}

TensorGeom block_geom(const TensorGeom& g, const HeadBlock& blk) {
  TensorGeom out = g;
  out.offset += blk.z0 * g.strides[0] + blk.h0 * g.strides[1];
  out.shape[0] = blk.nz, out.shape[1] = blk.nh;
  return out;
}

Problem problem_of(const Case& c) {
  const Sizes z = sizes_of(c);
  Problem p;
  p.q = c.geom(Q), p.k = c.geom(K), p.v = c.geom(V);
  p.b = z.b, p.hq = z.hq, p.hk = z.hk, p.sq = z.sq, p.sk = z.sk, p.d = z.d, p.dv = z.dv;
  p.scale = c.scalars[0].value, p.causal = c.scalars[1].value != 0;
  return p;
}

void reference_host(const Problem& p, const std::byte* q, const std::byte* k, const std::byte* v, const Model& m,
                    const HeadBlock& blk, BlockAnswer& out) {
  const int64_t rows = blk.rows(p.sq), group = p.hq / p.hk;
  std::vector<double> qrow(size_t(p.d));
  std::vector<Logit> logits(size_t(p.sk));
  std::vector<Column> cols(size_t(p.dv));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t zz = r / (blk.nh * p.sq), hh = (r / p.sq) % blk.nh, i = r % p.sq;
    const int64_t z = blk.z0 + zz, h = blk.h0 + hh, g = h / group;
    for (int64_t t = 0; t < p.d; ++t) qrow[size_t(t)] = load(q, p.q.dtype, at(p.q, z, h, i, t));
    const int64_t n = visible(p, i);
    softmax::RowMax mx;
    for (int64_t j = 0; j < n; ++j) {
      logits[size_t(j)] = logit(m, qrow.data(), k, p.k.dtype, at(p.k, z, g, j, 0), p.k.strides[3], p.d, p.scale);
      softmax::add(mx, logits[size_t(j)].s);
    }
    softmax::RowSum sum;
    if (!mx.nan && mx.m > -INFINITY && mx.m < INFINITY)
      for (int64_t j = 0; j < n; ++j) add(sum, m, logits[size_t(j)], mx.m);
    const softmax::RowStats st = softmax::finish(m.sm, mx, sum);
    const RowKind kind = kind_of(n, st);
    std::fill(cols.begin(), cols.end(), Column{});
    if (kind == RowKind::normal)
      for (int64_t j = 0; j < n; ++j) {
        const Term t = term(m, st, logits[size_t(j)]);
        for (int64_t c = 0; c < p.dv; ++c) add(cols[size_t(c)], t, load(v, p.v.dtype, at(p.v, z, g, j, c)));
      }
    for (int64_t c = 0; c < p.dv; ++c) {
      const size_t e = size_t(r * p.dv + c);
      finish_o(m, kind, st, n, cols[size_t(c)], &out.o[e], &out.o_bound[e], &out.o_alt[e]);
    }
    finish_lse(m, kind, mx, st, &out.lse[size_t(r)], &out.lse_bound[size_t(r)], &out.lse_alt[size_t(r)]);
  }
}

void reference_blocks(Backend& backend, const Case& c, std::span<const std::byte* const> device, const Model& m,
                      const BlockVisitor& visit, ResultsIn where) {
  const Problem p = problem_of(c);
  const Sizes z = sizes_of(c);
  const std::vector<HeadBlock> blocks = head_blocks(z);
  BlockAnswer a;  // host memory
  if (backend.kind() != BackendKind::cuda) {
    for (const HeadBlock& blk : blocks) {
      const size_t rows = size_t(blk.rows(p.sq));
      for (auto* v : {&a.o, &a.o_bound, &a.o_alt}) v->assign(rows * size_t(p.dv), 0.0);
      for (auto* v : {&a.lse, &a.lse_bound, &a.lse_alt}) v->assign(rows, 0.0);
      reference_host(p, device[Q], device[K], device[V], m, blk, a);
      visit(blk, AnswerArrays{a.o.data(), a.o_bound.data(), a.o_alt.data(), a.lse.data(), a.lse_bound.data(),
                              a.lse_alt.data()});
    }
    return;
  }
  size_t most = 0;
  for (const HeadBlock& blk : blocks) most = std::max(most, size_t(blk.rows(p.sq)));
  const size_t per_o = most * size_t(std::max<int64_t>(p.dv, 1));
  BackendArray o(backend, per_o), ob(backend, per_o), oa(backend, per_o), l(backend, most), lb(backend, most),
      la(backend, most);
  for (const HeadBlock& blk : blocks) {
    const AnswerArrays dev{o.data(), ob.data(), oa.data(), l.data(), lb.data(), la.data()};
    reference_cuda(backend.stream(), p, device[Q], device[K], device[V], m, blk, dev);
    const size_t rows = size_t(blk.rows(p.sq)), count = rows * size_t(p.dv);
    visit(blk, AnswerArrays{o.handed(where, count, a.o), ob.handed(where, count, a.o_bound),
                            oa.handed(where, count, a.o_alt), l.handed(where, rows, a.lse),
                            lb.handed(where, rows, a.lse_bound), la.handed(where, rows, a.lse_alt)});
  }
}

std::vector<std::vector<double>> reference_arrays(Backend& backend, const Case& c,
                                                  std::span<const std::byte* const> device, const Model& m) {
  const Sizes z = sizes_of(c);
  const bool lse = has_lse(c);
  std::vector<std::vector<double>> ref(c.tensors.size());
  ref[O].assign(size_t(z.b * z.hq * z.sq * z.dv), 0.0);
  if (lse) ref[LSE].assign(size_t(z.b * z.hq * z.sq), 0.0);
  reference_blocks(backend, c, device, m, [&](const HeadBlock& blk, const AnswerArrays& a) {
    const size_t head0 = size_t(blk.z0 * z.hq + blk.h0), rows = size_t(blk.rows(z.sq));
    std::copy(a.o, a.o + rows * size_t(z.dv), ref[O].begin() + long(head0 * size_t(z.sq * z.dv)));
    if (lse) std::copy(a.lse, a.lse + rows, ref[LSE].begin() + long(head0 * size_t(z.sq)));
  });
  return ref;
}

CompareStats compare_case(Backend& backend, const Case& c, std::span<const std::byte* const> device,
                          std::span<const std::byte* const> out, const Model& m, const Tolerances& tol,
                          const Deadline& deadline, std::vector<std::vector<double>>* keep_ref,
                          std::vector<std::vector<double>>* keep_bound) {
  const Sizes z = sizes_of(c);
  const bool lse = has_lse(c);
  CompareStats o_total, lse_total;
  if (keep_ref) {
    keep_ref->assign(c.tensors.size(), {}), keep_bound->assign(c.tensors.size(), {});
    (*keep_ref)[O].assign(size_t(z.b * z.hq * z.sq * z.dv), 0.0), (*keep_bound)[O] = (*keep_ref)[O];
    if (lse) (*keep_ref)[LSE].assign(size_t(z.b * z.hq * z.sq), 0.0), (*keep_bound)[LSE] = (*keep_ref)[LSE];
  }
  bool first = true;
  reference_blocks(backend, c, device, m, [&](const HeadBlock& blk, const AnswerArrays& a) {
    if (!first && deadline.passed()) throw DeadlineReached("the comparison was still running at the deadline");
    first = false;
    const int64_t head0 = blk.z0 * z.hq + blk.h0;  // the block's first head, in matrix-view rows of lse
    const size_t rows = size_t(blk.rows(z.sq)), count = rows * size_t(z.dv);
    ClassRefs o_alt, l_alt;
    o_alt.ref[o_alt.count++] = a.o_alt, l_alt.ref[l_alt.count++] = a.lse_alt;
    accumulate(o_total, backend.compare(tol.o, block_geom(c.geom(O), blk), out[O], a.o, a.o_bound, nullptr, o_alt),
               head0 * z.sq);
    if (lse)
      accumulate(lse_total,
                 backend.compare(tol.lse, block_geom(c.geom(LSE), blk), out[LSE], a.lse, a.lse_bound, nullptr, l_alt),
                 head0);
    if (keep_ref) {
      const size_t o0 = size_t(head0 * z.sq * z.dv), l0 = size_t(head0 * z.sq);
      read_doubles(backend, a.o, count, (*keep_ref)[O].data() + o0);
      read_doubles(backend, a.o_bound, count, (*keep_bound)[O].data() + o0);
      if (lse) {
        read_doubles(backend, a.lse, rows, (*keep_ref)[LSE].data() + l0);
        read_doubles(backend, a.lse_bound, rows, (*keep_bound)[LSE].data() + l0);
      }
    }
  }, ResultsIn::backend);
  for (BadElement& b : o_total.first_bad) b.tensor = O;
  for (BadElement& b : lse_total.first_bad) b.tensor = LSE;
  accumulate(o_total, lse_total, 0);
  return o_total;
}

}  // namespace assay::attention
