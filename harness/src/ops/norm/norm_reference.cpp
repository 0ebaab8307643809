#include "ops/norm/norm_reference.h"

#include <algorithm>
#include <vector>

namespace assay::norm {

void reference_rows(Backend& backend, const rows::Shape& s, const Inputs& in, const ErrorModel& e,
                    const BlockVisitor& visit, ResultsIn where) {
  const std::vector<rows::RowBlock> blocks = rows::row_blocks(s);
  if (blocks.empty()) return;
  int64_t most_rows = 0;
  for (const rows::RowBlock& b : blocks) most_rows = std::max(most_rows, b.rows);
  const size_t elements = size_t(rows::block_elements(s));
  // Where the backend's data lives; handed over as `where` says.
  BackendArray y_ref(backend, elements), y_bound(backend, elements), stat(backend, 4 * size_t(most_rows));
  std::vector<double> host_ref, host_bound, host_stat;
  for (const rows::RowBlock& b : blocks) {
    BlockOut out{y_ref.data(), y_bound.data(), {}};
    for (int i = 0; i < 4; ++i) out.stat[i] = stat.data() + size_t(i) * size_t(b.rows);
    if (backend.kind() == BackendKind::cuda) reference_cuda(backend.stream(), in, e, b.row0, b.rows, out);
    else reference_host(in, e, b.row0, b.rows, out);
    const size_t count = size_t(b.rows * s.n);
    BlockOut handed{y_ref.handed(where, count, host_ref), y_bound.handed(where, count, host_bound), {}};
    double* stats = stat.handed(where, 4 * size_t(b.rows), host_stat);
    for (int i = 0; i < 4; ++i) handed.stat[i] = stats + size_t(i) * size_t(b.rows);
    visit(b, handed);
  }
}

}  // namespace assay::norm
