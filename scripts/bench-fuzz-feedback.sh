#!/usr/bin/env bash
# Benchmark: does the extra-counter feedback of `assay fuzz` find a rare
# failure sooner? Runs the same campaign on a needle kernel (a bug the gate's
# sweep misses; default generated_kernels/needle/host/window_bug.yaml) with
# and without --no-features, for seeds 1..SEEDS, and writes a Markdown table
# of time and cases to the first failure, with the medians (a campaign that
# finds nothing counts as its full time).
#   scripts/bench-fuzz-feedback.sh [SECONDS] [SEEDS] [OUT.md] [SPEC] [PARALLEL]
# ASSAY (default build/assay) names the binary; KEEP=DIR keeps every campaign's
# output and log there. PARALLEL > 1 runs that many
# campaigns at once, both modes of a seed side by side (a GPU run: campaigns
# share the card; on a small host, keep 1).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}; seeds=${2:-3}; out=${3:-}
spec=${4:-generated_kernels/needle/host/window_bug.yaml}; parallel=${5:-1}
assay=${ASSAY:-build/assay}
work=$(mktemp -d)
campaign() {  # mode seed
  local flag=""; [ "$1" = without ] && flag=--no-features
  "$assay" fuzz "$spec" --time "${seconds}s" --seed "$2" --out "$work/$1-$2" --json "$work/$1-$2.json" $flag \
    > "$work/$1-$2.log" 2>&1 || true
}
running=0
for seed in $(seq 1 "$seeds"); do
  for mode in with without; do
    campaign "$mode" "$seed" &
    running=$((running + 1))
    if [ "$running" -ge "$parallel" ]; then wait -n || true; running=$((running - 1)); fi
  done
done
wait
python3 - "$work" "$seeds" "$seconds" "$spec" > "$work/table.md" <<'PY'
import json, os, statistics, sys
work, seeds, seconds, spec = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
def load(mode, seed):
    try:
        return json.load(open(os.path.join(work, f"{mode}-{seed}.json")))["kernels"][0]
    except Exception:
        return None
def cell(s):
    if s is None: return "no summary (campaign died)"
    t = s.get("time_to_first_failure_s")
    if t is None: return f"not found ({s['cases']} cases)"
    return f"{t:.1f} s / {s['failures'][0]['cases']} cases"
def first(s):  # seconds to the first failure, the whole time when none
    t = None if s is None else s.get("time_to_first_failure_s")
    return seconds if t is None else t
rows, times = [], {"with": [], "without": []}
found = {"with": 0, "without": 0}
for seed in range(1, seeds + 1):
    w, wo = load("with", seed), load("without", seed)
    for mode, s in (("with", w), ("without", wo)):
        times[mode].append(first(s))
        found[mode] += s is not None and s.get("time_to_first_failure_s") is not None
    rate = lambda s: "-" if s is None else f"{s['cases_per_s']:.0f}"
    rows.append(f"| {seed} | {cell(w)} | {cell(wo)} | {rate(w)} / {rate(wo)} |")
print(f"Kernel: `{spec}`; each campaign {seconds:.0f} s.\n")
print("| seed | first failure, with feedback | first failure, --no-features | cases/s with / without |")
print("| --- | --- | --- | --- |")
print("\n".join(rows))
print(f"| **median** | **{statistics.median(times['with']):.1f} s** ({found['with']}/{seeds} found) | "
      f"**{statistics.median(times['without']):.1f} s** ({found['without']}/{seeds} found) | |")
PY
note="Command: scripts/bench-fuzz-feedback.sh $seconds $seeds OUT $spec $parallel; commit $(git rev-parse --short HEAD); $(date -u +%F)."
cat "$work/table.md"; echo; echo "$note"
if [ -n "$out" ]; then { cat "$work/table.md"; echo; echo "$note"; } > "$out"; fi
if [ -n "${KEEP:-}" ]; then rm -rf "$KEEP"; mv "$work" "$KEEP"; else rm -rf "$work"; fi
