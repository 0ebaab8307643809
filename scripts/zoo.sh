#!/usr/bin/env bash
# The bug zoo (issue #5): every kernel of every op family's zoo
# (every folder of generated_kernels/ but needle and hostile) through
# assay's gate and the three baseline checkers (docs/baselines.md); the table
# lands in docs/results/DATE-zoo-BACKEND.{md,json}. Exit 0 when assay caught
# every planted kernel with no false alarm.
#
# On the GPU the gate gets its default 60 s per kernel. On the host (no GPU,
# CI on 2 cores) it gets ZOO_HOST_BUDGET seconds (default 30): most planted
# bugs fall in well under a second, but a few (bug_c_ld, bug_beta_one) first
# fail around case 40, 6-7 s in on a loaded 2-core machine, and 8 s proved too
# tight; correct kernels mostly finish their cases before 30 s.
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
  budget="${ZOO_HOST_BUDGET:-30}"
  echo "zoo: no GPU, host backend: gate budget ${budget} s per kernel instead of 60 (CI time)"
fi
# Every op family's zoo folder (needle is the fuzzing benchmark's, hostile
# runs on the GPU: scripts/gpu-zoo.sh).
families=()
for d in generated_kernels/*/; do
  case $(basename "$d") in needle | hostile) ;; *) families+=("${d%/}") ;; esac
done
exec build/assay zoo "${families[@]}" --backend auto --budget "$budget" --out "${ZOO_OUT:-docs/results}" "$@"
