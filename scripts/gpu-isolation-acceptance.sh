#!/usr/bin/env bash
# Issue #3's acceptance on a GPU machine, from binaries built elsewhere:
#   [BUDGET=SECONDS] bash scripts/gpu-isolation-acceptance.sh BIN_DIR OUT_DIR
# BUDGET: step 1's time per kernel (default 60; a passing kernel uses all of it).
# BIN_DIR holds assay, assay-worker and tests/ (scripts/stage-device.sh makes
# it); logs and reports land in OUT_DIR.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$1 OUT=$2
WORK=$(mktemp -d)
export ASSAY_SOURCE_DIR=$PWD
nvidia-smi -L | tee "$OUT/gpu.txt"

echo "== 0. GPU tests of the worker"
"$BIN/tests/assay_gpu_tests" "[worker]" 2>&1 | tail -4

echo "== 1. hostile cuda kernels mixed with correct ones, each in a worker"
"$BIN/assay" check generated_kernels/hostile/cuda generated_kernels/gemm/cuda/naive_f32.yaml \
  generated_kernels/gemm/cuda/tiled_f32.yaml generated_kernels/gemm/cuda/cublas_f32.yaml \
  --backend cuda --expect --quiet --budget "${BUDGET:-60}" --out "$WORK/iso" --cache-dir "$WORK/cache" --json "$OUT/isolation-check.json"
echo "exit $?"

echo "== 2. every saved crash/hang case replays with the same verdict"
for k in "$WORK"/iso/cuda_*; do
  first=$(ls "$k"/case-*-crash.yaml "$k"/case-*-hang.yaml 2>/dev/null | head -1)
  [ -n "$first" ] || continue
  want=$(basename "$first" .yaml | sed 's/.*-//')
  got=$("$BIN/assay" repro "$first" --cache-dir "$WORK/cache" 2>&1 | grep -o -E '\b(crash|hang)\b' | head -1)
  echo "$(basename "$k"): saved $want, repro $got"
done

echo "== 3. kill -9 in the middle of a run, then --resume"
"$BIN/assay" check generated_kernels/gemm/cuda/naive_f32.yaml generated_kernels/hostile/cuda/trap.yaml \
  --backend cuda --cases 400 --max-failures 1000 --budget 40 --quiet --out "$WORK/killed" \
  --cache-dir "$WORK/cache" > "$WORK/killed.log" 2>&1 &
pid=$!
sleep 12; kill -9 $pid; wait $pid 2>/dev/null
echo "killed after 12 s with $(grep -c '"event":"end"' "$WORK/killed/journal.jsonl") cases finished"
"$BIN/assay" check --resume "$WORK/killed" > "$WORK/resumed.log" 2>&1; echo "resume exit $?"
tail -4 "$WORK/resumed.log"
python3 - "$WORK/killed/journal.jsonl" <<'PY'
import json, sys, collections
ends = collections.Counter()
for line in open(sys.argv[1]):
    try: e = json.loads(line)
    except ValueError: continue
    if e.get("event") == "end": ends[(e["spec"], e["index"])] += 1
per_spec = collections.Counter(s for s, _ in ends)
print("finished cases per spec:", dict(per_spec))
print("cases finished more than once:", sum(1 for v in ends.values() if v > 1))
PY

echo "== 4. compute-sanitizer replays"
"$BIN/assay" check generated_kernels/gemm/cuda/naive_f32.yaml generated_kernels/gemm/cuda/bug_oob_write.yaml \
  generated_kernels/hostile/cuda/misaligned_load.yaml --backend cuda --sanitize memcheck --budget 20 --cases 60 \
  --out "$WORK/san" --cache-dir "$WORK/cache" --quiet --json "$OUT/sanitize.json"
echo "exit $?"
for f in "$WORK"/san/*/*.sanitizer-*.txt; do echo "--- $f"; grep -E "ERROR SUMMARY|Invalid|Program hit" "$f" | head -4; done

echo "== 5. memcheck names the planted out-of-bounds writes (exact allocations, issue #13)"
bash scripts/gpu-sanitize-oob.sh "$BIN" "$WORK/oob"

tar czf "$OUT/isolation-cases.tgz" --exclude=oob/cache -C "$WORK" iso san killed oob 2>/dev/null
