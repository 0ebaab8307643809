#!/usr/bin/env bash
# The bug zoo (issue #5): every kernel of every op family's zoo
# (every folder of generated_kernels/ but needle, hostile and bench, the
# planted cheats of assay bench) through
# assay's gate and the baseline checkers (docs/baselines.md); the table
# lands in docs/results/DATE-zoo-BACKEND.{md,json}. Exit 0 when assay caught
# every planted kernel with no false alarm.
#
# On the GPU the gate gets its default 60 s per kernel. On the host (no GPU,
# CI on 2 cores) it gets ZOO_HOST_BUDGET seconds (default 20, which keeps CI
# under its 25 minutes): most planted bugs fall in well under a second, the
# slowest (bug_c_ld, bug_beta_one, bug_relu_fmax) at 2.4-4.2 s in the last
# host zoos (once 6-7 s on a loaded machine; 8 s proved too tight); the
# correct kernels' random cases are what the shorter budget trims.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /usr/local/cuda/bin ] && export PATH="/usr/local/cuda/bin:$PATH"
if [ -f build/build.ninja ]; then
  cmake --build build --target assay assay-worker >/dev/null
else
  bash scripts/build.sh
fi
budget=60 kind=cuda limit=()
if ! nvidia-smi -L >/dev/null 2>&1; then
  budget="${ZOO_HOST_BUDGET:-20}" kind=host
  # The sample tests show every planted host bug failing by its 100th case;
  # a correct kernel's random cases past that were most of CI's zoo time.
  limit=(--max-cases "${ZOO_HOST_MAX_CASES:-150}")
  echo "zoo: no GPU, host backend: gate budget ${budget} s and at most ${limit[1]} cases per kernel (CI time)"
fi
out=${ZOO_OUT:-docs/results}
# Every op family's zoo folder (needle is the fuzzing benchmark's, hostile
# runs on the GPU: scripts/gpu-zoo.sh).
families=()
for d in generated_kernels/*/; do
  case $(basename "$d") in needle | hostile | bench) ;; *) families+=("${d%/}") ;; esac
done
# On the host each kernel runs in one worker process at a time, so shards
# (one per core, ZOO_SHARDS) share the machine's cores; on a GPU one zoo
# keeps its timings its own (scripts/gpu-zoo.sh shards on purpose).
shards=${ZOO_SHARDS:-1}
[ "$kind" = host ] && shards=${ZOO_SHARDS:-$(nproc)}
[ "$shards" -ge 1 ] || shards=1
if [ "$shards" -eq 1 ]; then
  exec build/assay zoo "${families[@]}" --backend auto --budget "$budget" "${limit[@]}" --out "$out" "$@"
fi
mapfile -t specs < <(for f in "${families[@]}"; do ls "$f/$kind"/*.yaml 2>/dev/null; done)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shard_dir=$out/zoo-shards  # each shard's own table (with its first failures), JSON and log
mkdir -p "$shard_dir"
pids=()
for g in $(seq 0 $((shards - 1))); do
  group=()
  for i in "${!specs[@]}"; do [ $((i % shards)) -eq "$g" ] && group+=("${specs[$i]}"); done
  [ ${#group[@]} -gt 0 ] || continue
  build/assay zoo "${group[@]}" --backend "$kind" --budget "$budget" "${limit[@]}" --out "$out" --json "$shard_dir/zoo-$g.json" \
    --markdown "$shard_dir/zoo-$g.md" "$@" >"$shard_dir/zoo-$g.log" 2>&1 &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
for log in "$shard_dir"/zoo-*.log; do grep -E '^zoo: ' "$log" || true; done
cat >"$tmp/note" <<NOTE
# Bug zoo: assay against today's checkers ($kind)

\`bash scripts/zoo.sh\` on $(nproc) cores, $shards shards side by side, gate budget $budget s a kernel${limit[1]:+, at most ${limit[1]} cases},
$(date -u +%F). Rules in docs/baselines.md; each kernel's first failures in the shards' own tables ($shard_dir).
NOTE
python3 scripts/merge-zoo-shards.py "$out/$(date -u +%F)-zoo-$kind" "$tmp/note" "$shard_dir"/zoo-*.json
echo "zoo: wrote $out/$(date -u +%F)-zoo-$kind.md and .json ($shards shards)"
[ "$status" -eq 0 ] || echo "zoo: a shard failed (a planted bug missed, a false alarm or an error): see above"
exit "$status"
