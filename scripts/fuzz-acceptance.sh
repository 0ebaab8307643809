#!/usr/bin/env bash
# Issue #4's acceptance for `assay fuzz`, on whatever machine this runs on.
# Planted-bug specs (expect != pass): a campaign of --time seconds must find
# the bug; reported: time to first failure, cases/s, shrink time, the shrunk
# case's dims and whether each is at most 2x the smallest failing value of
# that dim (the campaign probes below the shrunk case: fuzz-summary.json's
# smallest_failing_dims). Correct specs (expect: pass): a clean campaign of
# --clean-time seconds must report 0 failures. Writes a Markdown table and
# the JSON behind it to docs/results/ (or --out STEM.{md,json}).
#   scripts/fuzz-acceptance.sh [--backend host|cuda] [--time S] [--clean-time S] [--parallel P] [--out STEM] SPEC...
# --parallel P runs P campaigns at once (one GPU shared: cases/s and times to
# the first failure are then those of a shared card, and the report says so).
# ASSAY=path/to/assay overrides build/assay.
set -euo pipefail
cd "$(dirname "$0")/.."
backend=""; secs=60; clean=""; stem=""; specs=(); parallel=1
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) backend=$2; shift 2 ;;
    --time) secs=${2%s}; shift 2 ;;
    --clean-time) clean=${2%s}; shift 2 ;;
    --out) stem=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    *) specs+=("$1"); shift ;;
  esac
done
[ ${#specs[@]} -gt 0 ] || { echo "usage: $0 [--backend B] [--time S] [--clean-time S] [--out STEM] SPEC..." >&2; exit 2; }
clean=${clean:-$secs}
assay=${ASSAY:-build/assay}
field() { sed -n "s/^$1:[[:space:]]*\([^#[:space:]]*\).*/\1/p" "$2" | head -1; }
[ -n "$backend" ] || backend=$(field backend "${specs[0]}")
if command -v nvidia-smi > /dev/null && gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1) && [ -n "$gpu" ]; then
  machine="$gpu"
else
  machine="host ($(nproc) cores, no GPU)"
fi
stem=${stem:-docs/results/$(date -u +%F)-fuzz-acceptance-$backend}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
runs="$work/runs.txt"; : > "$runs"
for spec in "${specs[@]}"; do
  [ "$(field backend "$spec")" = "$backend" ] || { echo "skip $spec (backend $(field backend "$spec"))" >&2; continue; }
  expect=$(field expect "$spec"); t=$secs; [ "$expect" = pass ] && t=$clean
  name=$(basename "$spec" .yaml)
  echo "== $spec (expect $expect, ${t} s)" >&2
  (
    rc=0
    "$assay" fuzz "$spec" --time "${t}s" --out "$work/out-$name" --json "$work/$name.json" > "$work/$name.log" 2>&1 || rc=$?
    tail -n 1 "$work/$name.log" >&2
    printf '%s\t%s\t%s\t%s\t%s\n' "$spec" "$expect" "$t" "$rc" "$work/$name.json" >> "$runs"
  ) &
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
done
wait
sort -o "$runs" "$runs"
python3 - "$runs" "$stem" "$backend" "$machine" "$("$assay" --version 2>/dev/null || echo "assay (unknown build)")" "$(date -u +%FT%TZ)" \
  "scripts/fuzz-acceptance.sh --backend $backend --time $secs --clean-time $clean --parallel $parallel ${specs[*]}" <<'PY'
import json, os, sys
runs, stem, backend, machine, build, date, command = sys.argv[1:8]
rows = []
for line in open(runs):
    spec, expect, secs, rc, path = line.rstrip("\n").split("\t")
    s = json.load(open(path))["kernels"][0] if os.path.exists(path) else {}
    row = {"spec": spec, "kernel": s.get("kernel"), "expect": expect, "seconds": float(secs), "exit": int(rc),
           "cases": s.get("cases"), "cases_per_s": s.get("cases_per_s"),
           "distinct_failures": s.get("distinct_failures")}
    fails = s.get("failures") or []
    if expect == "pass":
        row["ok"] = row["exit"] == 0 and row["distinct_failures"] == 0
    else:
        f = fails[0] if fails else {}
        shrunk, small, exact = f.get("shrunk_dims", {}), f.get("smallest_failing_dims", {}), f.get("smallest_exact", {})
        # Every size the op names (GEMM's m, n, k; tokens, experts, topk; ...). A
        # smallest failing value of 0 is a size the op clamps to 1.
        within = {d: (shrunk[d] <= max(1, 2 * small[d])) if d in small and exact.get(d) else None for d in shrunk}
        row.update({"found": bool(fails), "verdicts": sorted({x["verdict"] for x in fails}),
                    "expected_verdict_found": any(x["verdict"] == expect for x in fails),
                    "time_to_first_failure_s": s.get("time_to_first_failure_s"),
                    "shrink_seconds": f.get("shrink_seconds"), "shrunk_dims": shrunk,
                    "smallest_failing_dims": small, "smallest_exact": exact, "within_2x": within})
        row["ok"] = bool(fails) and all(v is not False for v in within.values())
    rows.append(row)
ok = all(r["ok"] for r in rows)
head = {"backend": backend, "machine": machine, "date": date, "build": build, "command": command, "all_ok": ok}
json.dump({**head, "kernels": rows}, open(stem + ".json", "w"), indent=2)

def dims(d, e=None):
    return " ".join(f"{k}={d[k]}{'' if e is None or e.get(k) else '~'}" for k in d) or "-"
def num(x, f="{:.1f}"):
    return "-" if x is None else f.format(x)
md = [f"# assay fuzz acceptance: {backend} ({date[:10]})", "",
      f"Machine: {machine}. Built by {build}. Command: `{command}`.", "",
      "## Planted bugs: found, how fast, how small", "",
      "| kernel | expect | found (verdicts) | first failure | cases/s | shrink | shrunk dims | smallest failing | each <= 2x |",
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
for r in rows:
    if r["expect"] == "pass": continue
    w = r.get("within_2x") or {}
    wx = "n/a (not shrunk)" if all(v is None for v in w.values()) else \
        ("yes" if all(v is not False for v in w.values()) else "NO: " + ",".join(k for k, v in w.items() if v is False))
    md.append(f"| {r['kernel'] or r['spec']} | {r['expect']} | {'yes' if r['found'] else 'NO'} ({', '.join(r['verdicts'])}) | "
              f"{num(r['time_to_first_failure_s'])} s | {num(r['cases_per_s'], '{:.0f}')} | {num(r['shrink_seconds'], '{:.2f}')} s | "
              f"{dims(r['shrunk_dims'])} | {dims(r['smallest_failing_dims'], r['smallest_exact'])} | {wx} |")
md += ["", "## Correct kernels: clean campaigns", "", "| kernel | seconds | cases | cases/s | failures |", "| --- | --- | --- | --- | --- |"]
for r in rows:
    if r["expect"] != "pass": continue
    md.append(f"| {r['kernel'] or r['spec']} | {r['seconds']:.0f} | {r['cases']} | {num(r['cases_per_s'], '{:.0f}')} | {r['distinct_failures']} |")
md += ["", f"**{'All met' if ok else 'NOT all met'}.** `~` marks a smallest value probed on a grid (an upper bound); "
       "hangs are not shrunk (each attempt costs the whole timeout), so their dims are as found. Smallest failing values are probed one "
       "dimension at a time from 0 up, the other two held at the shrunk case's."]
open(stem + ".md", "w").write("\n".join(md) + "\n")
print("\n".join(md)); print(f"\nwrote {stem}.md and {stem}.json")
sys.exit(0 if ok else 1)
PY
