#!/usr/bin/env bash
# The GPU samples test ("cuda sample kernels get their expected verdicts",
# tests/gpu/test_gpu_samples.cpp) as `assay check --expect` with the test's
# gate options, split over PARALLEL processes so it fits one device call.
# The processes share the card: each keeps to its own share of the device
# memory and waits for memory that others hold (issue #13), so no kernel is
# run again alone; an infrastructure error stays in the table as a failure.
#   bash scripts/gpu-samples.sh BIN_DIR OUT_DIR [PARALLEL]
# OUT_DIR gets samples.txt (the per-kernel lines) and samples-json.tgz (each process's report).
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$1 OUT=$2 P=${3:-4}
export ASSAY_SOURCE_DIR=$PWD
rm -rf /tmp/samples-json /tmp/samples-[0-9]*.log
mkdir -p "$OUT" /tmp/samples-json
specs=(generated_kernels/gemm/cuda/*.yaml)
for ((i = 0; i < P; ++i)); do
  shard=()
  for ((j = i; j < ${#specs[@]}; j += P)); do shard+=("${specs[j]}"); done
  "$BIN/assay" check "${shard[@]}" --backend cuda --expect --cases 150 --budget 120 --max-failures 1 --quiet \
    --out "/tmp/samples-out-$i" --json "/tmp/samples-json/samples-$i.json" > "/tmp/samples-$i.log" 2>&1 &
done
wait
tar czf "$OUT/samples-json.tgz" -C /tmp samples-json
grep -h -E '^(ok|FAIL) ' /tmp/samples-[0-9]*.log | sort -k2 > "$OUT/samples.txt"
echo "$(grep -c '^ok' "$OUT/samples.txt") of $(wc -l < "$OUT/samples.txt") cuda sample kernels got their expected verdict" \
  | tee -a "$OUT/samples.txt"
grep '^FAIL' "$OUT/samples.txt"
exit 0
