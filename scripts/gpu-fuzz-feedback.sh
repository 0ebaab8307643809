#!/usr/bin/env bash
# Issue #4's two open GPU points in one device call of about 6 minutes, from
# binaries built elsewhere (scripts/stage-device.sh):
#   bash scripts/gpu-fuzz-feedback.sh BIN_DIR OUT_DIR [NEEDLE_SECONDS] [SEEDS] [HUGE_SECONDS]
# 1. The feedback experiment on the cuda needle (generated_kernels/needle/cuda:
#    wrong only for m % 64 in 33..63 and k > 2048): seeds 1..SEEDS with and
#    without extra counters, all 2*SEEDS campaigns at once on the card, both
#    modes of a seed side by side (scripts/bench-fuzz-feedback.sh).
# 2. Alongside, campaigns on the two planted bugs that need huge cases, one
#    after the other so each has the card's memory (a huge case takes up to
#    ~90 GB): bug_index32 (past 2^31 elements) and bug_grid_y (past 2^20 rows).
# OUT_DIR gets 6 files: needle-feedback.md, huge-{index32,grid_y}.json (the
# campaigns' summaries), huge-{index32,grid_y}.log (their output, tail) and summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$1 OUT=$2 SECS=${3:-60} SEEDS=${4:-5} HUGE=${5:-150}
export ASSAY_SOURCE_DIR=$PWD ASSAY=$BIN/assay
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/summary.txt"
git rev-parse --short HEAD >> "$OUT/summary.txt" 2>/dev/null || true
# The needle campaigns plan for 8 GiB each (ASSAY_DEVICE_MEMORY_GIB): their
# huge cases stay small ones, and the card's memory is left to the huge campaigns.
ASSAY_DEVICE_MEMORY_GIB=8 timeout $((SECS * 3 + 120)) bash scripts/bench-fuzz-feedback.sh "$SECS" "$SEEDS" "$OUT/needle-feedback.md" \
  generated_kernels/needle/cuda/window_bug.yaml $((2 * SEEDS)) > /tmp/needle-feedback.log 2>&1 &
for bug in index32 grid_y; do
  timeout $((HUGE + 60)) "$ASSAY" fuzz "generated_kernels/gemm/cuda/bug_$bug.yaml" --time "${HUGE}s" --seed 1 \
    --out /tmp/huge-out --json "$OUT/huge-$bug.json" > /tmp/huge-$bug.log 2>&1
  echo "bug_$bug: exit $?" >> "$OUT/summary.txt"
  tail -c 20000 /tmp/huge-$bug.log > "$OUT/huge-$bug.log"
done
wait
python3 - "$OUT" >> "$OUT/summary.txt" <<'PY'
import json, os, sys
for bug in ("index32", "grid_y"):
    try:
        s = json.load(open(os.path.join(sys.argv[1], f"huge-{bug}.json")))["kernels"][0]
    except Exception as e:
        print(f"bug_{bug}: no summary ({e})"); continue
    f = s["failures"][0] if s["failures"] else None
    print(f"bug_{bug}: {s['cases']} cases, {s.get('huge_cases')} huge ({s.get('huge_seconds', 0):.0f} s), "
          + (f"first failure after {f['seconds']:.1f} s: {f['verdict']} {f['case']}" if f else "NOT FOUND"))
PY
cat "$OUT/summary.txt" "$OUT/needle-feedback.md"
