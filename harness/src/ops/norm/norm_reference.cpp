#include "ops/norm/norm_reference.h"

#include <algorithm>
#include <vector>

namespace assay::norm {

void reference_rows(Backend& backend, const rows::Shape& s, const Inputs& in, const ErrorModel& e,
                    const BlockVisitor& visit) {
  const std::vector<rows::RowBlock> blocks = rows::row_blocks(s);
  if (blocks.empty()) return;
  int64_t most_rows = 0;
  for (const rows::RowBlock& b : blocks) most_rows = std::max(most_rows, b.rows);
  const size_t elements = size_t(rows::block_elements(s));
  std::vector<double> y_ref(s.n > 0 ? elements : 1), y_bound(y_ref.size()), stat(4 * size_t(most_rows));
  BlockOut out{y_ref.data(), y_bound.data(), {}};
  for (int i = 0; i < 4; ++i) out.stat[i] = stat.data() + size_t(i) * size_t(most_rows);
  for (const rows::RowBlock& b : blocks) {
    if (backend.kind() == BackendKind::cuda) reference_cuda(backend.stream(), in, e, b.row0, b.rows, out);
    else reference_host(in, e, b.row0, b.rows, out);
    visit(b, out);
  }
}

}  // namespace assay::norm
