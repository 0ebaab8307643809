#!/usr/bin/env bash
# The GPU samples test ("cuda sample kernels get their expected verdicts",
# tests/gpu/test_gpu_samples.cpp) as `assay check --expect` with the test's
# gate options, split over PARALLEL processes so it fits one device call
# (kernels that the shards' shared memory starved run again alone, after):
#   bash scripts/gpu-samples.sh BIN_DIR OUT_DIR [PARALLEL]
# OUT_DIR gets samples.txt (the per-kernel lines) and samples-json.tgz (each process's report).
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$1 OUT=$2 P=${3:-4}
export ASSAY_SOURCE_DIR=$PWD
rm -rf /tmp/samples-json /tmp/again-samples /tmp/samples-[0-9]*.log
mkdir -p "$OUT" /tmp/samples-json
specs=(generated_kernels/gemm/cuda/*.yaml)
for ((i = 0; i < P; ++i)); do
  shard=()
  for ((j = i; j < ${#specs[@]}; j += P)); do shard+=("${specs[j]}"); done
  "$BIN/assay" check "${shard[@]}" --backend cuda --expect --cases 150 --budget 120 --max-failures 1 --quiet \
    --out "/tmp/samples-out-$i" --json "/tmp/samples-json/samples-$i.json" > "/tmp/samples-$i.log" 2>&1 &
done
wait
# Shards that met huge cases at the same time can run the card out of memory
# (a kernel's setup or reference then fails: infrastructure, not verdict):
# such kernels run again, one at a time, with the card to themselves.
again=$(python3 - /tmp/samples-json/samples-*.json <<'PY'
import json, sys
for f in sys.argv[1:]:
    for k in json.load(open(f))["kernels"]:
        if k["verdict"] in ("setup_error", "infrastructure_error"):
            print(k["spec"])
PY
)
for spec in $again; do
  mkdir -p /tmp/again-samples
  log=/tmp/again-samples/$(basename "$spec" .yaml).log
  "$BIN/assay" check "$spec" --backend cuda --expect --cases 150 --budget 120 --max-failures 1 --quiet \
    --out /tmp/samples-again --json "/tmp/samples-json/again-$(basename "$spec" .yaml).json" > "$log" 2>&1
  grep -E '^(ok|FAIL) ' "$log" | sed 's/$/ (run again alone)/' > "$log.line"
  # the alone run's line replaces the shard's
  name=$(awk '{print $2}' "$log.line")
  for l in /tmp/samples-[0-9]*.log; do sed -i "/^\(ok\|FAIL\) *$name /d" "$l"; done
  cat "$log.line" >> /tmp/samples-0.log
done
tar czf "$OUT/samples-json.tgz" -C /tmp samples-json
grep -h -E '^(ok|FAIL) ' /tmp/samples-[0-9]*.log | sort -k2 > "$OUT/samples.txt"
echo "$(grep -c '^ok' "$OUT/samples.txt") of $(wc -l < "$OUT/samples.txt") cuda sample kernels got their expected verdict" \
  | tee -a "$OUT/samples.txt"
grep '^FAIL' "$OUT/samples.txt"
exit 0
