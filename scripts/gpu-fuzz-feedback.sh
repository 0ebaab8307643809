#!/usr/bin/env bash
# Issue #4's two GPU points in one device call of about 7 minutes, from
# binaries built elsewhere (scripts/stage-device.sh):
#   bash scripts/gpu-fuzz-feedback.sh BIN_DIR OUT_DIR [NEEDLE_SECONDS] [SEEDS] [HUGE_SECONDS] [PARALLEL]
# 1. The feedback experiment on the cuda needle (generated_kernels/needle/cuda:
#    wrong only for m % 64 in 33..63 and k > 2048): seeds 1..SEEDS, each with
#    and without extra counters side by side, PARALLEL campaigns at once
#    (default 2: one seed's pair; ten at once ran at 1-9 cases/s each, too few
#    for either mode to show anything: docs/results/2026-11-29-h200-fuzz-session3.md).
#    Defaults: 60 s, 5 seeds: about 6 minutes.
# 2. Then campaigns on the two planted bugs that need huge cases, both at
#    once, each planning for 60 GiB (ASSAY_DEVICE_MEMORY_GIB): bug_index32
#    (past 2^31 elements) and bug_grid_y (past 2^20 rows), HUGE_SECONDS each
#    (default 45).
# OUT_DIR gets 6 files: needle-feedback.md, huge-{index32,grid_y}.json (the
# campaigns' summaries), huge-{index32,grid_y}.log (their output, tail) and summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$1 OUT=$2 SECS=${3:-60} SEEDS=${4:-5} HUGE=${5:-45} P=${6:-2}
export ASSAY_SOURCE_DIR=$PWD ASSAY=$BIN/assay
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/summary.txt"
"$ASSAY" --version >> "$OUT/summary.txt"  # the binaries' own build: this copy may not be a git checkout
# The needle campaigns plan for 8 GiB each: their huge cases stay small ones.
ASSAY_DEVICE_MEMORY_GIB=8 timeout $(( (SECS + 20) * 2 * SEEDS / P + 30 )) bash scripts/bench-fuzz-feedback.sh \
  "$SECS" "$SEEDS" "$OUT/needle-feedback.md" generated_kernels/needle/cuda/window_bug.yaml "$P" \
  > /tmp/needle-feedback.log 2>&1
echo "needle: exit $?" >> "$OUT/summary.txt"
for bug in index32 grid_y; do
  ASSAY_DEVICE_MEMORY_GIB=60 timeout $((HUGE + 40)) "$ASSAY" fuzz "generated_kernels/gemm/cuda/bug_$bug.yaml" \
    --time "${HUGE}s" --seed 1 --out /tmp/huge-out --json "$OUT/huge-$bug.json" > /tmp/huge-$bug.log 2>&1 &
done
wait
for bug in index32 grid_y; do tail -c 20000 /tmp/huge-$bug.log > "$OUT/huge-$bug.log"; done
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
