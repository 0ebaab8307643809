#!/usr/bin/env bash
# Issue #18's before/after in one device call: two staged builds (each
# scripts/stage-device.sh's .device/, copied aside) measured back to back on
# one machine, so their ratios share a GPU, a clock and a load. Ratios from
# different calls (or cards) are not compared.
#   bash scripts/gpu-speed-compare.sh BASE_BIN NEW_BIN[:NEW_BIN2...] OUT_DIR [SECONDS] [SIZES]
# Several new builds (a change in steps, each on the one before) are
# measured in their order; the last one is "the new build" below.
# Steps, each timed into OUT_DIR/steps.txt with its exit code:
#   1. the new build's GPU tests of the judging path (comparison, derived
#      references, references, batched set-up);
#   2. assay_bench_speed of the base build, each new build, then the base
#      again (a drift between the two base runs says how far to trust a
#      difference);
#   3. the new build's 10,000-case cuBLAS f32 run (no false alarm allowed).
# OUT_DIR/logs.tgz holds every log; summary.txt the headline lines.
set -uo pipefail
cd "$(dirname "$0")/.."
usage() {
  echo "usage: $0 BASE_BIN NEW_BIN[:NEW_BIN2...] OUT_DIR [SECONDS] [SIZES] (each BIN a staged build with assay_bench_speed)" >&2
  exit 2
}
[ $# -ge 3 ] || usage
BASE=$1 OUT=$3 SECONDS_EACH=${4:-1.5} SIZES=${5:-}
IFS=: read -r -a NEWS <<< "$2"
for bin in "$BASE" "${NEWS[@]}"; do [ -x "$bin/assay_bench_speed" ] || usage; done
NEW=${NEWS[-1]}
runs=(base)  # run names: base, new (one new build) or new1, new2, ..., base-again
if [ ${#NEWS[@]} -eq 1 ]; then runs+=(new); else for i in "${!NEWS[@]}"; do runs+=("new$((i + 1))"); done; fi
runs+=(base-again)
export ASSAY_SOURCE_DIR=$PWD
work=$(mktemp -d)
steps=$work/steps.txt
started=$SECONDS
step() {  # step NAME COMMAND...: runs it, its output in NAME.log
  local name=$1
  shift
  local t0=$SECONDS
  "$@" > "$work/$name.log" 2>&1
  local rc=$?
  echo "$name rc $rc in $((SECONDS - t0)) s (at $((SECONDS - started)) s)" >> "$steps"
}
sizes=()
[ -n "$SIZES" ] && sizes=(--sizes "$SIZES")
nvidia-smi -L > "$work/gpu.txt" 2>&1
if [ -x "$NEW/tests/assay_gpu_tests" ]; then
  step gpu-tests "$NEW/tests/assay_gpu_tests" "[compare],[derived],[reference],[batch]"
fi
bin_of() {  # the staged build of a run name
  case $1 in
    base | base-again) echo "$BASE" ;;
    new) echo "$NEW" ;;
    *) echo "${NEWS[$((${1#new} - 1))]}" ;;
  esac
}
for run in "${runs[@]}"; do
  bin=$(bin_of "$run")
  step "speed-$run" "$bin/assay_bench_speed" --seconds "$SECONDS_EACH" "${sizes[@]}" \
    --out "$work/speed-$run.md" --json "$work/speed-$run.json"
done
step cublas-10k "$NEW/assay" check generated_kernels/gemm/cuda/cublas_f32.yaml --cases 10000 --budget 300
{
  cat "$work/gpu.txt" "$steps"
  grep -h "test cases\|All tests" "$work/gpu-tests.log" 2>/dev/null
  for run in "${runs[@]}"; do
    echo "== $run ($(bin_of "$run"))"
    grep -h "gate path\|an assay case takes\|_ratio_to_ceiling\|_overhead" "$work/speed-$run.md" 2>/dev/null | cut -c1-240
  done
  tail -2 "$work/cublas-10k.log"
} > "$work/summary.txt"
mkdir -p "$OUT"
tar czf "$OUT/logs.tgz" -C "$work" .
cp "$work/summary.txt" "$OUT/"
for run in "${runs[@]}"; do [ -f "$work/speed-$run.json" ] && cp "$work/speed-$run.json" "$OUT/"; done
cat "$work/summary.txt"
rm -rf "$work"
exit 0
