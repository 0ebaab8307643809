#!/usr/bin/env bash
# The fuzz lab (bench/fuzz_lab.cpp) over many seeds: how many cases the
# campaign's search needs to reach a window bug (m % BLOCK above BLOCK / 2 and
# k > STAGE) with and without the extra-counter feedback. No kernel runs, so
# 200 seeds take seconds; counts are exact per seed.
#   scripts/fuzz-lab.sh BLOCK STAGE [SEEDS] [FIRST_SEED] [MAX_CASES]
# ASSAY_FUZZ_LAB_LIMITS=host uses the host's ordinary limits (default cuda's).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then echo "usage: $0 BLOCK STAGE [SEEDS] [FIRST_SEED] [MAX_CASES]" >&2; exit 2; fi
block=$1 stage=$2 seeds=${3:-100} first=${4:-1} max=${5:-200000}
lab=${ASSAY_FUZZ_LAB:-build/assay_fuzz_lab}
# Arguments the lab refuses stop here, with its message, before any seed runs.
if ! err=$("$lab" "$block" "$stage" with "$first" 1 2>&1 >/dev/null); then
  grep "usage\|BLOCK" <<< "$err" >&2; exit 2
fi
echo "| window | limits | mode | seeds | found | cases to the window: p25 / median / p75 |"
echo "| --- | --- | --- | --- | --- | --- |"
for mode in with without; do
  for s in $(seq "$first" $((first + seeds - 1))); do
    "$lab" "$block" "$stage" "$mode" "$s" "$max" 2>/dev/null | grep -E "^(found|not found)" || true
  done | python3 -c "
import re, sys
found, counts = 0, []
for line in sys.stdin:
    counts.append(int(re.search(r'(\d+) cases', line).group(1)))
    found += line.startswith('found')
counts.sort()
q = lambda p: counts[min(len(counts) - 1, int(p * len(counts)))]
print(f'| m % $block > $((block / 2)), k > $stage | ${ASSAY_FUZZ_LAB_LIMITS:-cuda} | $mode | {len(counts)} | {found} | {q(0.25)} / {q(0.5)} / {q(0.75)} |')
"
done
