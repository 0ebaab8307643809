#!/usr/bin/env bash
# Issue #4's and #5's GPU measurements in one device call, from binaries built
# elsewhere (scripts/stage-device.sh):
#   bash scripts/gpu-fuzz-speed.sh BIN_DIR OUT_DIR [FUZZ_SECONDS] [PARALLEL]
# 1. assay_bench_speed alone on the card (timings need it to themselves);
# 2. then, sharing the card: fuzz acceptance over every cuda zoo spec
#    (PARALLEL campaigns at once), the feedback experiment on the cuda needle
#    (with and without extra counters, same seed, side by side) and the GPU
#    tests of the worker.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$1 OUT=$2 SECS=${3:-60} P=${4:-10}
export ASSAY_SOURCE_DIR=$PWD ASSAY=$BIN/assay
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$BIN/assay_bench_speed" --seconds 3 --out "$OUT/speed.md" 2>&1
# The zoo kernels a shared-card run lost to memory (every third spec from the second).
mapfile -t zoo < <(ls generated_kernels/gemm/cuda/*.yaml | sort | awk 'NR % 3 == 2')
timeout 500 "$BIN/assay" zoo "${zoo[@]}" generated_kernels/gemm/cuda/tf32_wmma.yaml --backend cuda --out "$OUT" \
  --json "$OUT/zoo-cuda-1.json" --markdown "$OUT/zoo-cuda-1.md" --cases-out /tmp/zoo-cases-1 > /tmp/zoo-1.log 2>&1 &
needle=generated_kernels/needle/cuda/window_bug.yaml
for mode in with without; do
  flag=""; [ $mode = without ] && flag=--no-features
  "$BIN/assay" fuzz "$needle" --time "${SECS}s" --seed 1 --out "/tmp/needle-$mode" $flag \
    --json "$OUT/needle-$mode.json" > "/tmp/needle-$mode.log" 2>&1 &
done
"$BIN/tests/assay_gpu_tests" "[worker]" > "$OUT/gpu-worker-tests.log" 2>&1 &
bash scripts/fuzz-acceptance.sh --backend cuda --time "$SECS" --clean-time "$SECS" --parallel "$P" \
  --out "$OUT/fuzz-acceptance-cuda" generated_kernels/gemm/cuda/*.yaml > /tmp/fuzz-acceptance.log 2>&1
wait
tail -3 "$OUT/gpu-worker-tests.log"; tail -8 /tmp/zoo-1.log
grep -E "NO|All met|NOT" "$OUT/fuzz-acceptance-cuda.md" | head -20
