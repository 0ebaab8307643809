#!/usr/bin/env bash
# Concurrent runs on one card give the verdicts of a run alone (issue #13,
# point 4): the cuda samples (gemm and hostile) through `assay check
# --expect`, once alone, then as RUNS processes at once on the same GPU, each
# with its own output folder; each kernel's verdict is compared across all.
#   bash scripts/gpu-concurrent-samples.sh BIN_DIR OUT_DIR [CASES] [RUNS]
# BIN_DIR: assay, assay-worker and include/ (e.g. .device from
# scripts/stage-device.sh). CASES (default 24) per kernel: the sweep's first
# ones, which hold both 32-bit-limit cases (about 40 GiB each, sweep indices
# 6 and 13), so that RUNS (default 4) runs need more memory than the card
# has whenever three meet there. First failures are not shrunk (time).
# Prints a table and "N of N kernels: same verdict in all RUNS concurrent
# runs as alone"; exits 1 when a verdict differs, a run lacks one, or one is
# the machine's (infrastructure_error, setup_error), which would be the same
# everywhere without proving anything. OUT_DIR
# gets the table (concurrent.txt), the reports and the logs.
# Measured on an H200 (2026-12-01): compiling 22 s; alone 131 s at 4 cases a
# kernel (24 cases took more than 170 s). The concurrent runs were not
# measured yet: ALONE_S and CONCURRENT_S (seconds) bound the two steps, so
# that the whole fits one 10-minute device call; a step killed by its
# timeout writes no report.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$(realpath "$1") OUT=$2 CASES=${3:-4} RUNS=${4:-4}
ALONE_S=${ALONE_S:-200} CONCURRENT_S=${CONCURRENT_S:-330}
W=/tmp/assay-concurrent
rm -rf "$W" && mkdir -p "$W" "$OUT"
specs=(generated_kernels/gemm/cuda generated_kernels/hostile/cuda)
# A generous budget: the cases, not the clock, bound each kernel, so that a
# run slowed by its neighbours runs the same cases.
common=(--backend cuda --expect --cases "$CASES" --budget 300 --max-failures 1 --shrink-attempts 0 --quiet
        --cache-dir "$W/cache")
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'

# 1. Every kernel compiled once, 8 at a time (no case runs): the runs below
#    then time cases, not nvcc, and share the cache.
files=(generated_kernels/gemm/cuda/*.yaml generated_kernels/hostile/cuda/*.yaml)
t0=$(date +%s)
for ((i = 0; i < 8; ++i)); do
  shard=()
  for ((j = i; j < ${#files[@]}; j += 8)); do shard+=("${files[j]}"); done
  timeout 100 "$BIN/assay" check "${shard[@]}" --backend cuda --cases 0 --quiet --cache-dir "$W/cache" \
    --out "$W/compile-$i" > "$W/compile-$i.log" 2>&1 &
done
wait
echo "compiled ${#files[@]} kernels in $(( $(date +%s) - t0 )) s"

# 2. Alone.
t0=$(date +%s)
timeout "$ALONE_S" "$BIN/assay" check "${specs[@]}" "${common[@]}" --out "$W/alone" --json "$W/alone.json" \
  > "$W/alone.log" 2>&1
echo "alone: exit $?, $(( $(date +%s) - t0 )) s"

# 3. RUNS at once.
t0=$(date +%s)
for ((r = 1; r <= RUNS; ++r)); do
  timeout "$CONCURRENT_S" "$BIN/assay" check "${specs[@]}" "${common[@]}" --out "$W/run-$r" --json "$W/run-$r.json" \
    > "$W/run-$r.log" 2>&1 &
done
wait
echo "$RUNS concurrent runs: $(( $(date +%s) - t0 )) s"

python3 - "$W" "$RUNS" > "$OUT/concurrent.txt" <<'PY'
import json, os, sys
w, runs = sys.argv[1], int(sys.argv[2])
def load(name):
    try:
        return {k["name"]: k for k in json.load(open(os.path.join(w, name + ".json")))["kernels"]}
    except (OSError, ValueError) as e:
        print(f"{name}: no report ({e})")
        return {}
alone = load("alone")
concurrent = [load(f"run-{r}") for r in range(1, runs + 1)]
names = sorted(set(alone).union(*concurrent))
print(f"{'kernel':<30} {'expect':<18} {'alone':<22} " + " ".join(f"{'run ' + str(r):<22}" for r in range(1, runs + 1)))
same = met = 0
for n in names:
    a = alone.get(n, {}).get("verdict", "-")
    vs = [c.get(n, {}).get("verdict", "-") for c in concurrent]
    # The machine's verdicts prove nothing (no GPU gives "infrastructure_error" everywhere, the same).
    ok = a not in ("-", "infrastructure_error", "setup_error") and all(v == a for v in vs)
    same += ok
    met += alone.get(n, {}).get("expect_met", False)
    print(f"{n:<30} {alone.get(n, {}).get('expect', ''):<18} {a:<22} " + " ".join(f"{v:<22}" for v in vs)
          + ("" if ok else "  <-- not the kernel's verdict" if a in ("infrastructure_error", "setup_error") else "  <-- differs"))
for label, rep in [("alone", alone)] + [(f"run {r}", c) for r, c in enumerate(concurrent, 1)]:
    ks = rep.values()
    waits = sum(k.get("memory_waits", 0) for k in ks)
    secs = sum(k.get("memory_wait_seconds", 0.0) for k in ks)
    infra = sum(len(k.get("infrastructure_errors", [])) for k in ks)
    cases = sum(k.get("cases_run", 0) for k in ks)
    print(f"{label}: {cases} cases, {waits} waits for device memory ({secs:.1f} s), {infra} cases not run "
          f"(infrastructure)")
print(f"alone: {met} of {len(names)} kernels got their expected verdict")
print(f"{same} of {len(names)} kernels: same verdict in all {runs} concurrent runs as alone")
sys.exit(0 if names and same == len(names) else 1)
PY
status=$?
cat "$OUT/concurrent.txt"
cp "$W"/*.json "$OUT"/ 2>/dev/null
tar czf "$OUT/concurrent-logs.tgz" -C "$W" $(cd "$W" && ls *.log) 2>/dev/null
exit $status
