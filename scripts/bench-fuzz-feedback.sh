#!/usr/bin/env bash
# Benchmark: does the extra-counter feedback of `assay fuzz` find a rare
# failure sooner? Runs the same campaign on generated_kernels/needle (a bug the
# gate's sweep misses) with and without --no-features, for several seeds, and
# writes a Markdown table of time and cases to the first failure.
#   scripts/bench-fuzz-feedback.sh [SECONDS] [SEEDS] [OUT.md]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}; seeds=${2:-3}; out=${3:-}
spec=generated_kernels/needle/host/window_bug.yaml
work=$(mktemp -d)
row() {  # mode seed -> "first_failure_seconds cases_per_second"
  local dir="$work/$1-$2"
  build/assay fuzz "$spec" --time "${seconds}s" --seed "$2" --out "$dir" $3 > "$dir.log" 2>&1 || true
  python3 - "$dir/host_window_bug/fuzz-summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
first = f"{s['first_failure_seconds']:.1f} s / {s['first_failure_cases']} cases" if s['first_failure_cases'] >= 0 else f"not found ({s['cases']} cases)"
print(f"{s['cases_per_second']:.0f}|{first}")
PY
}
table="| seed | first failure, with feedback | first failure, --no-features | cases/s with / without |
| --- | --- | --- | --- |"
for seed in $(seq 1 "$seeds"); do
  IFS='|' read -r with_r with_t < <(row with "$seed" "")
  IFS='|' read -r without_r without_t < <(row without "$seed" "--no-features")
  table+=$'\n'"| $seed | $with_t | $without_t | $with_r / $without_r |"
done
note="Each campaign ran ${seconds} s. Command: scripts/bench-fuzz-feedback.sh $seconds $seeds; commit $(git rev-parse --short HEAD); $(date -u +%F)."
echo "$table"; echo; echo "$note"
if [ -n "$out" ]; then { echo "$table"; echo; echo "$note"; } > "$out"; fi
rm -rf "$work"
