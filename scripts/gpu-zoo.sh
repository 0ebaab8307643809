#!/usr/bin/env bash
# The cuda zoo on a GPU machine from binaries built elsewhere, in G parallel
# shards (one GPU, G processes: wall time matters more than per-kernel time
# here; the seconds to detect are inflated by the sharing and say so):
#   [FAMILY=gemm] bash scripts/gpu-zoo.sh BIN_DIR OUT_DIR [G] [BUDGET]
# FAMILY: one or more zoo folders under generated_kernels/ (gemm, softmax,
# custom, hostile, layernorm, rmsnorm, reduce, unary), space-separated, or
# "all" (every folder but needle); ZOO_TIMEOUT: seconds per shard (560).
# The reports are named after them
# (zoo-FAMILY-cuda-G.json, the names joined by "+").
# ZOO_MODE=check: `assay check --expect` instead of `assay zoo` (assay's
# column alone, no baseline checkers, first failure kept and not shrunk:
# the planted-bug and false-alarm count in about half the time); its JUnit
# per shard is check-FAMILY-cuda-G.xml
# and each kernel's line ("ok ..." or "FAIL ...", with "(expected VERDICT)") is in the log.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$1 OUT=$2 G=${3:-3} BUDGET=${4:-60} FAMILY=${FAMILY:-gemm} ZOO_TIMEOUT=${ZOO_TIMEOUT:-560} ZOO_MODE=${ZOO_MODE:-zoo}
export ASSAY_SOURCE_DIR=$PWD
mkdir -p "$OUT"
if [ "$FAMILY" = all ]; then
  FAMILY=$(for d in generated_kernels/*/cuda; do f=${d%/cuda}; f=${f#generated_kernels/}; case $f in needle | bench) ;; *) echo "$f" ;; esac; done | tr '\n' ' ')
fi
read -r -a families <<<"$FAMILY"
FAMILY=$(IFS=+; echo "${families[*]}")
mapfile -t specs < <(for f in "${families[@]}"; do ls generated_kernels/"$f"/cuda/*.yaml; done | sort)
for g in $(seq 0 $((G - 1))); do
  group=()
  for i in "${!specs[@]}"; do [ $((i % G)) -eq "$g" ] && group+=("${specs[$i]}"); done
  if [ "$ZOO_MODE" = check ]; then
    timeout "$ZOO_TIMEOUT" "$BIN/assay" check "${group[@]}" --backend cuda --expect --budget "$BUDGET" \
      --max-failures 1 --shrink-attempts 0 --junit "$OUT/check-$FAMILY-cuda-$g.xml" \
      --out "/tmp/zoo-cases-$FAMILY-$g" --cache-dir /tmp/zoo-cache-$g \
      > "$OUT/check-$FAMILY-cuda-$g.log" 2>&1 &
  else
    timeout "$ZOO_TIMEOUT" "$BIN/assay" zoo "${group[@]}" --backend cuda --budget "$BUDGET" --out "$OUT" \
      --json "$OUT/zoo-$FAMILY-cuda-$g.json" --markdown "$OUT/zoo-$FAMILY-cuda-$g.md" \
      --cases-out "/tmp/zoo-cases-$FAMILY-$g" --cache-dir /tmp/zoo-cache-$g > "$OUT/zoo-$FAMILY-cuda-$g.log" 2>&1 &
  fi
done
wait
tail -n 8 "$OUT"/"$ZOO_MODE"-"$FAMILY"-cuda-*.log
