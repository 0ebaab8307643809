#!/usr/bin/env bash
# The bug zoo (issue #5): every kernel in generated_kernels/gemm through
# assay's gate and the three baseline checkers (docs/baselines.md); the table
# lands in docs/results/DATE-zoo-BACKEND.{md,json}. Exit 0 when assay caught
# every planted kernel with no false alarm.
#
# On the GPU the gate gets its default 60 s per kernel. On the host (no GPU,
# CI on 2 cores) it gets ZOO_HOST_BUDGET seconds (default 8), which keeps the
# run near two minutes: planted bugs are caught within a second either way,
# only the correct kernels run fewer random cases.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
if [ -f build/build.ninja ]; then
  cmake --build build --target assay assay-worker >/dev/null
else
  bash scripts/build.sh
fi
budget=60
if ! nvidia-smi -L >/dev/null 2>&1; then
  budget="${ZOO_HOST_BUDGET:-8}"
  echo "zoo: no GPU, host backend: gate budget ${budget} s per kernel instead of 60 (CI time)"
fi
exec build/assay zoo generated_kernels/gemm --backend auto --budget "$budget" --out docs/results "$@"
