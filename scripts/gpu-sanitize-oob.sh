#!/usr/bin/env bash
# Issue #13 (point 5) on a GPU machine: `assay check --sanitize memcheck` on
# the planted out-of-bounds kernels must save a memcheck report that names
# the faulting access and the kernel. Before the replays allocated each tensor
# exactly, every report said 0 errors: the stray stores landed in assay's own
# guard zones (docs/results/2026-11-29-h200-sanitize.json).
#   bash scripts/gpu-sanitize-oob.sh [BIN_DIR] [OUT_DIR]
# BIN_DIR holds assay and assay-worker (default build; scripts/stage-device.sh
# makes .device); OUT_DIR (default a temporary folder) gets the case files, the
# sanitizer reports, the JSON reports and the logs. One PASS/FAIL line per
# kernel; exit 0 when both pass.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build} OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
"$BIN/assay" --version
status=0
# spec : the __global__ function that overruns C : what memcheck must report.
# bug_oob_tile_n also loads C past the row when beta != 0 (its epilogue reads
# C0 before the store), so its first error may be the read.
for k in "bug_oob_write:gemm_naive:Invalid __global__ write" \
         "bug_oob_tile_n:gemm_tiled:Invalid __global__ (write|read)"; do
  IFS=: read -r name fn want <<< "$k"
  "$BIN/assay" check "generated_kernels/gemm/cuda/$name.yaml" --backend cuda --sanitize memcheck --max-failures 1 \
    --out "$OUT/$name" --cache-dir "$OUT/cache" --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
  rc=$?
  reports=$(find "$OUT/$name" -name '*.sanitizer-memcheck.txt' | sort)
  hit=""
  for r in $reports; do
    if grep -qE "$want" "$r" && grep -q "$fn" "$r"; then hit=$r; break; fi
  done
  if [ -n "$hit" ]; then
    echo "PASS $name (check exit $rc): $hit"
    grep -m 1 -A 4 -E "$want" "$hit" | sed 's/^/    /'
  else
    echo "FAIL $name (check exit $rc): no memcheck report shows '$want' in $fn"
    for r in $reports; do echo "    $r: $(grep -m 1 'ERROR SUMMARY' "$r")"; done
    tail -5 "$OUT/$name.log" | sed 's/^/    /'
    status=1
  fi
done
echo "reports in $OUT"
exit $status
