#!/usr/bin/env bash
# Benchmark: does the extra-counter feedback of `assay fuzz` find a rare
# failure sooner? Runs the same campaign on a needle kernel (a bug the gate's
# sweep misses; default generated_kernels/needle/host/window_bug.yaml) with
# and without --no-features, for seeds 1..SEEDS, and writes a Markdown table
# of time and cases to the first failure (its verdict and dims), with the
# medians (a campaign that finds nothing counts as its full time).
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
import json, os, re, statistics, sys
work, seeds, seconds, spec = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
# A needle kernel is wrong only in its window, so its first failure of any
# verdict is the needle (dropped products holding NaN or Inf give nan_mismatch);
# the case's dims show that it lies in the window.
def load(mode, seed):
    try:
        return json.load(open(os.path.join(work, f"{mode}-{seed}.json")))["kernels"][0]
    except Exception:
        return None
def needle(s):
    hits = (s or {}).get("failures", [])
    return min(hits, key=lambda f: f["seconds"]) if hits else None
def cell(s):
    if s is None: return "no summary (campaign died)"
    f = needle(s)
    if f is None: return f"not found ({s['cases']} cases)"
    dims = re.search(r"m=\d+ n=\d+ k=\d+", f.get("case", "")) if isinstance(f.get("case"), str) else None
    return f"{f['seconds']:.1f} s / {f['cases']} cases" + (f" ({f['verdict']} {dims.group(0)})" if dims else "")
def first(s):  # seconds to the needle, the whole time when not found
    f = needle(s)
    return seconds if f is None else f["seconds"]
rows, times = [], {"with": [], "without": []}
found = {"with": 0, "without": 0}
for seed in range(1, seeds + 1):
    w, wo = load("with", seed), load("without", seed)
    for mode, s in (("with", w), ("without", wo)):
        times[mode].append(first(s))
        found[mode] += needle(s) is not None
    rate = lambda s: "-" if s is None else f"{s['cases_per_s']:.0f}"
    rows.append(f"| {seed} | {cell(w)} | {cell(wo)} | {rate(w)} / {rate(wo)} |")
print(f"Kernel: `{spec}`; each campaign {seconds:.0f} s.\n")
print("| seed | first failure, with feedback | first failure, --no-features | cases/s with / without |")
print("| --- | --- | --- | --- |")
print("\n".join(rows))
print(f"| **median** | **{statistics.median(times['with']):.1f} s** ({found['with']}/{seeds} found) | "
      f"**{statistics.median(times['without']):.1f} s** ({found['without']}/{seeds} found) | |")
sooner = sum(a < b for a, b in zip(times["with"], times["without"]))
print(f"\nFeedback sooner in {sooner} of {seeds} seeds.")
PY
note="Command: scripts/bench-fuzz-feedback.sh $seconds $seeds OUT $spec $parallel; $("$assay" --version); $(date -u +%F)."
cat "$work/table.md"; echo; echo "$note"
if [ -n "$out" ]; then { cat "$work/table.md"; echo; echo "$note"; } > "$out"; fi
if [ -n "${KEEP:-}" ]; then rm -rf "$KEEP"; mv "$work" "$KEEP"; else rm -rf "$work"; fi
