#!/usr/bin/env bash
# Issue #13, point 2, on a GPU: do `assay fuzz --time` and `assay check
# --budget` keep their time and host memory promises?
#   bash scripts/gpu-fuzz-bounds.sh BIN_DIR OUT_DIR [SECONDS]
# BIN_DIR holds assay and assay-worker (build/, or .device/ from
# scripts/stage-device.sh). Runs, one after the other, a SECONDS-long (default
# 60) campaign on each of
#   tiled_f32      the issue's kernel (shared-memory tiles, no requires),
#   naive_f32      slow on huge cases (one thread per element of C),
#   slow_naive_f32 tests/kernels: sleeps 1 us per multiply-add, so a case is
#                  always running when the time is up,
# then the gate on the slow kernel with --budget SECONDS, and prints per run:
# wall time against the promise (SECONDS + max(10, 10 %)), the peak resident
# set (largest process, /usr/bin/time; and the whole process tree, sampled
# every 0.5 s), the caps the run printed, and what its summary or report says
# (finished, unfinished case, huge cases). A table goes to OUT_DIR/bounds.md.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$(cd "$1" && pwd) OUT=$2 S=${3:-60}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export ASSAY_SOURCE_DIR=$PWD
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
free -g | head -2
limit=$(python3 -c "print($S + max(10, $S / 10))")

# KiB resident in PID and its descendants now.
tree_kib() {
  ps -eo pid=,ppid=,rss= | awk -v root="$1" '{ parent[$1] = $2; rss[$1] = $3 }
    END { for (p in parent) { q = p; while (q != root && q > 1) q = parent[q]; if (q == root) sum += rss[p] }
          print sum + 0 }'
}

# run NAME COMMAND...: the command under /usr/bin/time (when there is one),
# its process tree sampled; leaves OUT/NAME.{log,time,tree}.
run() {
  local name=$1; shift
  local timer=()
  [ -x /usr/bin/time ] && timer=(/usr/bin/time -v -o "$OUT/$name.time")
  local t0 t1
  t0=$(date +%s.%N)
  "${timer[@]}" "$@" > "$OUT/$name.log" 2>&1 &
  local pid=$! peak=0 now
  while kill -0 "$pid" 2>/dev/null; do
    now=$(tree_kib "$pid"); [ "$now" -gt "$peak" ] && peak=$now
    sleep 0.5
  done
  wait "$pid"; local rc=$?
  t1=$(date +%s.%N)
  echo "$peak" > "$OUT/$name.tree"
  python3 - "$name" "$rc" "$t0" "$t1" "$OUT" "$limit" <<'EOF'
import json, os, re, sys
name, rc, t0, t1, out, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], float(sys.argv[6])
wall = t1 - t0
log = open(os.path.join(out, name + ".log"), errors="replace").read()
peak = None
if os.path.exists(os.path.join(out, name + ".time")):
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(os.path.join(out, name + ".time")).read())
    peak = int(m.group(1)) / 2**20 if m else None
tree = int(open(os.path.join(out, name + ".tree")).read()) / 2**20
caps = [l for l in log.splitlines() if "host memory limit" in l or l.startswith("limits:")]
summary = {}
path = os.path.join(out, name + ".json")
if os.path.exists(path):
    j = json.load(open(path))
    k = (j.get("kernels") or [None])[0] or {}
    hm = k.get("host_memory") or {}
    summary = {"finished": k.get("finished"), "seconds": k.get("seconds"), "cases": k.get("cases", k.get("cases_run")),
               "huge_cases": k.get("huge_cases"), "failures": k.get("distinct_failures", len(k.get("failures", []))),
               "unfinished": (k.get("unfinished_case") or {}).get("case"), "stopped": k.get("stopped"),
               "own_peak_rss_gib": (hm.get("peak_rss_bytes") or j.get("peak_rss_bytes") or 0) / 2**30,
               "host_limit_gib": (hm.get("limit_bytes") or 0) / 2**30}
print(f"== {name}: exit {rc}, wall {wall:.1f} s (promise {limit:.0f} s: {'kept' if wall <= limit else 'BROKEN'}), "
      f"peak RSS {'%.2f GiB' % peak if peak is not None else 'n/a'} (largest process), {tree:.2f} GiB (tree, sampled)")
for c in caps[:2]: print("   printed:", c)
print("   summary:", json.dumps(summary) if summary else "NO SUMMARY/REPORT JSON")
with open(os.path.join(out, "bounds.md"), "a") as md:
    md.write(f"| {name} | {rc} | {wall:.1f} | {'yes' if wall <= limit else 'NO'} | "
             f"{'%.2f' % peak if peak is not None else 'n/a'} | {tree:.2f} | {summary.get('host_limit_gib', 0):.1f} | "
             f"{summary.get('finished')} | {summary.get('cases')} | {summary.get('huge_cases')} | "
             f"{summary.get('unfinished') or ''} |\n")
EOF
}

echo "| run | exit | wall s | within ${limit} s | peak RSS GiB (largest process) | peak RSS GiB (tree) | host limit GiB | finished | cases | huge cases | unfinished case |" > "$OUT/bounds.md"
echo "|---|---|---|---|---|---|---|---|---|---|---|" >> "$OUT/bounds.md"
for spec in generated_kernels/gemm/cuda/tiled_f32.yaml generated_kernels/gemm/cuda/naive_f32.yaml \
            tests/kernels/slow_naive_f32_cuda.yaml; do
  name=fuzz-$(basename "$spec" .yaml)
  extra=()
  [[ $spec == tests/* ]] && extra=(--timeout 3600)  # its calls are slow on purpose: stopped at the deadline, not hangs
  run "$name" "$BIN/assay" fuzz "$spec" --time "${S}s" --seed 1 --out "$OUT/out" --json "$OUT/$name.json" "${extra[@]}"
done
run check-slow_naive_f32_cuda "$BIN/assay" check tests/kernels/slow_naive_f32_cuda.yaml --budget "$S" --timeout 3600 \
  --out "$OUT/out" --json "$OUT/check-slow_naive_f32_cuda.json" --corpus none
echo; cat "$OUT/bounds.md"
