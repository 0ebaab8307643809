#!/usr/bin/env bash
# The cuda zoo on a GPU machine from binaries built elsewhere, in G parallel
# shards (one GPU, G processes: wall time matters more than per-kernel time
# here; the seconds to detect are inflated by the sharing and say so):
#   bash scripts/gpu-zoo.sh BIN_DIR OUT_DIR [G] [BUDGET]
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$1 OUT=$2 G=${3:-3} BUDGET=${4:-60}
export ASSAY_SOURCE_DIR=$PWD
mapfile -t specs < <(ls generated_kernels/gemm/cuda/*.yaml | sort)
for g in $(seq 0 $((G - 1))); do
  group=()
  for i in "${!specs[@]}"; do [ $((i % G)) -eq "$g" ] && group+=("${specs[$i]}"); done
  timeout 560 "$BIN/assay" zoo "${group[@]}" --backend cuda --budget "$BUDGET" --out "$OUT" \
    --json "$OUT/zoo-cuda-$g.json" --markdown "$OUT/zoo-cuda-$g.md" --cases-out "/tmp/zoo-cases-$g" \
    --cache-dir /tmp/zoo-cache-$g > "$OUT/zoo-cuda-$g.log" 2>&1 &
done
wait
tail -n 8 "$OUT"/zoo-cuda-*.log
